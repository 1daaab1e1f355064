import { describe, expect, it } from 'vitest';
import { fromDocker, isContainerGone } from '../../../host/sandbox/docker/errors.ts';

/** Errors shaped as docker-modem makes them (an HTTP answer) or as a socket fails (no answer). */
const answered = (statusCode: number, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) - ${message}`), { statusCode, json: { message } });
const unanswered = () =>
  Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' });

describe('docker errors name the real cause', () => {
  it('a container that is gone is reported as gone, not as an engine to check', () => {
    const e = fromDocker(answered(404, 'No such container: abc'), 'Assigning a pooled sandbox');
    expect(e.code).toBe('SANDBOX_UNAVAILABLE');
    expect(e.message).toMatch(/container is gone \(No such container: abc\)/);
    expect(e.message).not.toMatch(/engine is running/);
    expect(isContainerGone(e)).toBe(true);
  });

  it('only an engine that did not answer is one to check', () => {
    expect(fromDocker(unanswered(), 'Listing sandboxes').message).toMatch(
      /Check that the Docker engine is running/,
    );
    const busy = fromDocker(answered(409, 'removal of container abc is already in progress'), 'Removing');
    expect(busy.message).toBe(
      'Removing failed: the Docker engine answered removal of container abc is already in progress (HTTP 409).',
    );
    expect(isContainerGone(busy)).toBe(false);
    expect(fromDocker(answered(404, 'No such image: x'), 'Creating').code).toBe('CONFIG_INVALID');
  });
});
