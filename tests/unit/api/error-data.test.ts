// Error bodies carry the error's structured `data` (issue 20 gap: the client saw only code and
// message): the current revision of a conflict, the limit of a refusal, the issues of an invalid
// body, over HTTP and in a call stream's `error` event. Only a client error's (4xx) own data goes
// out: a 5xx's data (store paths, container ids) and anything that is not plain JSON stay home.
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { errorHandler, PUBLIC_DATA_BYTES } from '../../../host/api/errors.ts';
import { SandboxError } from '../../../host/errors.ts';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

/** A bare app whose one route throws `error`, answered by the service's error handler. */
const answerTo = async (error: unknown): Promise<{ status: number; body: Loose }> => {
  const app = new Hono();
  app.onError(errorHandler());
  app.get('/x', () => {
    throw error;
  });
  const res = await app.request('/x');
  return { status: res.status, body: await res.json() };
};

describe('error bodies with data', () => {
  it("send a client error's own data", async () => {
    const conflict = new SandboxError('REVISION_CONFLICT', 'The task changed; read it again.', {
      data: { task_id: 't1', currentRevision: 7 },
    });
    expect(await answerTo(conflict)).toEqual({
      status: 409,
      body: {
        error: {
          code: 'REVISION_CONFLICT',
          message: 'The task changed; read it again.',
          data: { task_id: 't1', currentRevision: 7 },
        },
      },
    });
    const limit = new SandboxError('CHILD_LIMIT_EXCEEDED', 'Too many children.', {
      data: { limit: 'children', max: 8 },
    });
    expect((await answerTo(limit)).body.error.data).toEqual({ limit: 'children', max: 8 });
  });

  it("keep a server error's data, the cause and the stack to the server", async () => {
    const store = new SandboxError('STORE_FAILED', 'The store failed.', {
      data: { path: '/var/lib/dsh/store.db', sqliteCode: 'SQLITE_IOERR' },
      cause: new Error('disk I/O error at /var/lib/dsh'),
    });
    const { status, body } = await answerTo(store);
    expect(status).toBe(500);
    expect(body).toEqual({ error: { code: 'STORE_FAILED', message: 'The store failed.' } });
    const sandbox = new SandboxError('SANDBOX_UNAVAILABLE', 'The sandbox is gone.', {
      data: { container: 'abc123' },
    });
    expect(JSON.stringify((await answerTo(sandbox)).body)).not.toContain('abc123');
  });

  it('leave out data that is not plain JSON or is too large, and answer anyway', async () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const looped = await answerTo(new SandboxError('CONFLICT', 'x', { data: cyclic }));
    expect(looped).toEqual({ status: 409, body: { error: { code: 'CONFLICT', message: 'x' } } });
    const big = await answerTo(
      new SandboxError('LIMIT_EXCEEDED', 'y', { data: { blob: 'z'.repeat(PUBLIC_DATA_BYTES) } }),
    );
    expect(big).toEqual({ status: 400, body: { error: { code: 'LIMIT_EXCEEDED', message: 'y' } } });
    const odd = await answerTo(new SandboxError('CONFLICT', 'z', { data: { n: 1n } as never }));
    expect(odd.body.error).toEqual({ code: 'CONFLICT', message: 'z' });
  });

  describe('through the API', () => {
    let api: Api;
    afterEach(() => api.close());

    it('names the issues of an invalid body', async () => {
      api = await makeApi();
      const bad = await api.request(api.keyA, 'POST', '/v1/agents', { preset: 'nope', extra: 1 });
      expect(bad.status).toBe(400);
      expect(bad.json.error.code).toBe('BAD_REQUEST');
      expect(bad.json.error.data.issues.map((i: Loose) => i.path).sort()).toEqual(['extra', 'preset']);
    });

    it("carries the data in a call stream's error event too", async () => {
      api = await makeApi();
      const agent = await api.createAgent(api.keyA);
      const res = await api.app.request(`/v1/agents/${agent.id}/calls`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${api.keyA}`,
          'Content-Type': 'application/json',
          Accept: 'text/event-stream',
        },
        body: JSON.stringify({ calls: [{ id: 'c1', name: 'read', arguments: {} }], step: 'no-such-step' }),
      });
      const text = await res.text();
      const line = text.split('\n').find((l) => l.startsWith('data: {"error"'));
      expect(JSON.parse(line?.slice('data: '.length) ?? '{}')).toEqual({
        error: { code: 'STEP_NOT_FOUND', message: expect.any(String), data: { step: 'no-such-step' } },
      });
    });

    it('says when to retry a refusal for too many requests at once', async () => {
      api = await makeApi({ tenantConcurrency: 1 });
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let entered = false;
      api.app.get('/v1/agents/:id/hold', async (c) => {
        entered = true;
        await held;
        return c.body(null, 204);
      });
      const agent = await api.createAgent(api.keyA);
      const first = api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/hold`);
      await until(() => entered);
      const second = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`);
      release();
      await first;
      expect(second.status).toBe(429);
      expect(second.json.error).toMatchObject({ code: 'RATE_LIMITED', data: { retryAfterS: 1 } });
      expect(second.headers.get('retry-after')).toBe('1');
    });
  });
});
