// The replica settings (host/replica.ts, rows of host/settings.ts): DSH_REPLICA_URL is a base URL
// or refused at start, and without it the URL comes from the listen address; DSH_REPLICA_ID fits
// a header or is refused; the default id is new each start.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../host/config.ts';
import { newReplicaId, REPLICA_ID, replicaUrlOf } from '../../../host/replica.ts';

describe('replica settings', () => {
  it('takes DSH_REPLICA_URL as the origin it names, and refuses anything else at start', () => {
    expect(loadConfig({}, { DSH_REPLICA_URL: 'http://replica-a.internal:7070/' }, '/srv').replicaUrl).toBe(
      'http://replica-a.internal:7070',
    );
    expect(loadConfig({}, { DSH_REPLICA_URL: 'https://a.internal' }, '/srv').replicaUrl).toBe(
      'https://a.internal',
    );
    for (const bad of [
      'replica-a.internal:7070',
      'ftp://a',
      'http://a/prefix',
      'http://a?x=1',
      'http://u:p@a',
    ])
      expect(() => loadConfig({}, { DSH_REPLICA_URL: bad }, '/srv'), bad).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    expect(loadConfig({}, {}, '/srv').replicaUrl).toBeUndefined();
  });

  it('derives the URL from the listen address when DSH_REPLICA_URL is unset', () => {
    expect(replicaUrlOf({ host: '127.0.0.2' }, 8711)).toBe('http://127.0.0.2:8711');
    expect(replicaUrlOf({ host: '0.0.0.0' }, 8711)).toBe('http://127.0.0.1:8711');
    expect(replicaUrlOf({ host: '::' }, 8711)).toBe('http://[::1]:8711');
    expect(replicaUrlOf({ host: 'fd00::5' }, 8711)).toBe('http://[fd00::5]:8711');
    expect(replicaUrlOf({ host: '0.0.0.0', replicaUrl: 'http://b:1' }, 8711)).toBe('http://b:1');
  });

  it('takes a DSH_REPLICA_ID that fits a header, and makes a new one each start without it', () => {
    expect(loadConfig({}, { DSH_REPLICA_ID: 'replica-a.eu:1' }, '/srv').replicaId).toBe('replica-a.eu:1');
    for (const bad of ['has space', 'x'.repeat(65), 'bad\nline'])
      expect(() => loadConfig({}, { DSH_REPLICA_ID: bad }, '/srv')).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    expect(() => loadConfig({ replicaId: 'no spaces allowed' }, {}, '/srv')).toThrow();
    const [a, b] = [newReplicaId(), newReplicaId()];
    expect(a).toMatch(REPLICA_ID);
    expect(a).not.toBe(b);
  });
});
