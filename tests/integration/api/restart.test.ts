// Graceful shutdown and restart over real HTTP with real containers: open event streams end with a
// `shutdown` event, an in-flight call fails with SHUTTING_DOWN, the agent's container is left
// running, and a new control plane on the same data directory re-adopts it with its files.
import { expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { readSse } from '../../unit/api/sse.ts';
import { json, served } from './served.ts';

const service = served('restart', { shutdownGraceMs: 300 });
const { fixture } = service;

it("shuts down gracefully and re-adopts the agent's container after a restart", async () => {
  const first = await service.start();
  const key = (await first.store.tenants.createTenant('restart')).apiKey;
  const agent = (
    await json(first, key, 'POST', '/v1/agents', {
      remoteTools: [
        { name: 'wait_for_client', description: 'never answered', parameters: { type: 'object' } },
      ],
    })
  ).json;
  const [written] = (
    await json(first, key, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [
        {
          id: 'w',
          name: 'bash',
          arguments: { command: 'echo survived > keep.txt && cat keep.txt', description: 'write' },
        },
      ],
    })
  ).json.results;
  expect(written.ok).toBe(true);

  const stream = await fetch(`${first.url}/v1/agents/${agent.id}/events`, {
    headers: { Authorization: `Bearer ${key}`, Accept: 'text/event-stream' },
  });
  const events = readSse(stream.body as ReadableStream<Uint8Array>, (m) => m.at(-1)?.event === 'shutdown');
  const inFlight = json(first, key, 'POST', `/v1/agents/${agent.id}/calls`, {
    calls: [{ id: 'h', name: 'wait_for_client', arguments: {} }],
  });
  await until(
    async () =>
      (await json(first, key, 'GET', `/v1/agents/${agent.id}/requests?state=pending`)).json.requests.length >
      0,
    { what: 'the call to wait for its client' },
  );
  // The held call is never answered: had close() waited for it, it would not return.
  await service.stop(first);
  const [failed] = (await inFlight).json.results;
  expect(failed).toMatchObject({ ok: false, error: { code: 'SHUTTING_DOWN' } });
  const messages = await events;
  expect(messages.at(-1)?.event).toBe('shutdown');

  const containers = await fixture.docker.listContainers({
    filters: { label: [`dsh.test=${fixture.runId}`] },
  });
  expect(containers.length).toBe(1);

  const second = await service.start();
  const file = await fetch(`${second.url}/v1/agents/${agent.id}/files?path=keep.txt`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(await file.text()).toBe('survived\n');
  const tools = (await json(second, key, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools.map(
    (t: { name: string }) => t.name,
  );
  expect(tools).toContain('wait_for_client');
  const log = (await json(second, key, 'GET', `/v1/agents/${agent.id}/events`)).json.events;
  expect(
    log.some((e: Loose) => e.callId === 'h' && e.type === 'tool.result' && e.data.error.code === 'ABORTED'),
  ).toBe(true);
});
