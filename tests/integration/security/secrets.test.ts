// Secrets and internals. Guarantees: an API key is never written to a log, an event, an error or
// a response other than the one that created it; the store holds only hashes (checked in the
// database file's bytes, WAL included); errors shown to the model or the client carry no host
// paths and no stack traces.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, METRICS_KEY, startHarness, text } from './harness.ts';

let h: Harness;
let agent: string;
const stderr: string[] = [];
const originalWrite = process.stderr.write.bind(process.stderr);

const LEAKS = [/\/work\//, /node_modules/, /\n\s+at /, /\bat [\w.<>]+ \(/, /\.ts:\d+:\d+/, /\/tmp\/dsh-sec-/];

beforeAll(async () => {
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    stderr.push(String(chunk));
    return originalWrite(chunk as never, ...(rest as []));
  }) as typeof process.stderr.write;
  h = await startHarness();
  agent = await h.agent(h.keyA, { policy: { deny: ['edit'] } });
});

afterAll(async () => {
  process.stderr.write = originalWrite;
  await h?.close();
});

const provokeErrors = async (): Promise<Loose[]> => {
  const results = await h.calls(h.keyA, agent, [
    ['unknown', 'no_such_tool', {}],
    ['invalid', 'read', { file_path: 42 }],
    ['missing', 'read', { file_path: 'does/not/exist.txt' }],
    ['dir', 'read', { file_path: '.' }],
    ['outside', 'read', { file_path: '/etc/shadow' }],
    ['denied', 'edit', { file_path: 'a', old_string: 'a', new_string: 'b' }],
    ['timeout', 'bash', { command: 'sleep 5', description: 't', timeoutMs: 200 }],
    ['failing', 'bash', { command: 'exit 3', description: 'f' }],
    ['badjob', 'job_output', { job_id: '../../../etc/passwd' }],
    ['grep', 'grep', { pattern: '(', path: '.' }],
    ['glob', 'glob', { pattern: '[', path: '/nope' }],
  ]);
  return results;
};

describe('secrets and internals', () => {
  it('errors shown to the model and the client carry no host paths or stack traces', async () => {
    const results = await provokeErrors();
    // bash reports a timeout or a failing command as a successful call with its exit status.
    expect(results.filter((r) => r.ok).map((r) => r.id)).toEqual(['timeout', 'failing']);
    for (const r of results) {
      for (const leak of LEAKS) {
        expect(text(r), `${r.id} (model view)`).not.toMatch(leak);
        expect(JSON.stringify(r), `${r.id} (client view)`).not.toMatch(leak);
      }
    }
    const httpErrors = [
      await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=nope.txt`),
      await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=%2Fetc%2Fshadow`),
      await h.http(h.keyA, 'GET', `/v1/agents/${agent}/archive?path=missing-dir`),
      await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/archive?path=x`, 'not a tar', {
        'Content-Type': 'application/x-tar',
      }),
      await h.http(h.keyA, 'POST', '/v1/agents', '{bad', { 'Content-Type': 'application/json' }),
      await h.http(h.keyA, 'GET', '/v1/nowhere'),
      await h.http(h.keyA, 'POST', '/v1/tenants', { name: 'x' }),
    ];
    for (const res of httpErrors) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(typeof res.json.error.code).toBe('string');
      for (const leak of LEAKS) expect(res.text).not.toMatch(leak);
    }
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events?limit=5000`);
    const modelFacing = (events.json.events as Loose[]).filter((e) => e.type === 'tool.result');
    for (const e of modelFacing)
      for (const leak of LEAKS) expect(JSON.stringify(e.data), e.callId).not.toMatch(leak);
  });

  it('API keys never appear in logs, events, errors or other responses', async () => {
    const keys = [h.keyA, h.keyB];
    // A wrong key close to a real one, a key in the query string, a key as a tool argument name.
    const nearMiss = `${h.keyA.slice(0, -4)}AAAA`;
    const responses = [
      await h.http(nearMiss, 'GET', '/v1/agents'),
      await h.http(undefined, 'GET', `/v1/agents?api_key=${h.keyA}`),
      await h.http(h.keyB, 'GET', `/v1/agents/${agent}`),
      await h.http(h.keyA, 'GET', `/v1/agents/${agent}`),
      await h.http(h.keyA, 'GET', '/v1/agents'),
      await h.http(METRICS_KEY, 'GET', '/metrics'),
      await h.http(undefined, 'GET', '/openapi.json'),
      await h.http(undefined, 'GET', '/v1/health'),
    ];
    await h.calls(h.keyA, agent, [
      ['env', 'bash', { command: 'env; cat /proc/1/environ | tr "\\0" "\\n"', description: 'env' }],
    ]);
    await provokeErrors();
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events?limit=5000`);
    const haystacks = [...responses.map((r) => r.text), events.text, h.logs.join('\n'), stderr.join('')];
    for (const hay of haystacks)
      for (const key of keys) {
        expect(hay).not.toContain(key);
        expect(hay).not.toContain(key.slice(4)); // the secret part without the dsk_ tag
      }
    expect(responses[0]?.text).not.toContain(nearMiss);
  });

  it('the database holds only key hashes: no raw key in the file bytes (WAL included)', async () => {
    await h.http(h.keyA, 'GET', '/v1/agents');
    const files = readdirSync(h.dataDir).filter((f) => f.startsWith('store.db'));
    expect(files).toContain('store.db');
    const defaultKey = readFileSync(join(h.dataDir, 'default-tenant.key'), 'utf8').trim();
    for (const f of files) {
      const bytes = readFileSync(join(h.dataDir, f));
      for (const key of [h.keyA, h.keyB, defaultKey]) {
        expect(bytes.includes(Buffer.from(key)), `${f} holds a raw key`).toBe(false);
        expect(bytes.includes(Buffer.from(key.slice(12))), `${f} holds the secret part of a key`).toBe(false);
      }
    }
  });

  it('the data directory is 0700 and the default key file 0600', () => {
    expect(statSync(h.dataDir).mode & 0o077).toBe(0);
    expect(statSync(join(h.dataDir, 'default-tenant.key')).mode & 0o777).toBe(0o600);
    for (const f of readdirSync(h.dataDir).filter((n) => n.startsWith('store.db')))
      expect(statSync(join(h.dataDir, f)).mode & 0o077, f).toBe(0);
  });

  it('the sandbox sees no secret of the service: no API key, admin key or Docker endpoint in its environment', async () => {
    const [r] = await h.calls(h.keyA, agent, [
      ['env2', 'bash', { command: 'env; tr "\\0" "\\n" < /proc/1/environ', description: 'env' }],
    ]);
    const env = text(r);
    expect(env).not.toMatch(/dsk_|DSH_ADMIN_KEY|DOCKER_HOST|API_KEY/);
  });
});
