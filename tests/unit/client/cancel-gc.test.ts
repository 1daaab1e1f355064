// Cancelling survives garbage collection: a client process run with --expose-gc
// (./cancel-gc-child.ts) opens an event stream, an onRequest listener, a call batch and a streamed
// call batch, forces collections while each is open, then cancels it. What a user sees is
// asserted: the cancelled promise or iteration settles, and the service lets go (the stream
// closes, the batch stops running, the host request it waited on is no longer pending). Node 24
// once lost such aborts after a collection when the signal travelled only inside a Request.
import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';

const CHILD = fileURLToPath(new URL('./cancel-gc-child.ts', import.meta.url));
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
const METRICS_KEY = 'metrics-key-for-tests-0123456789';
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents, metricsKey: METRICS_KEY });
const key = (await store.tenants.createTenant('tenant-gc')).apiKey;
let server: ServerType;
let baseUrl: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  store.close();
});

/** The client process of `scenario`, and every line it printed so far. */
function client(scenario: string): { lines: string[]; stderr: () => string } {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--no-node-snapshot', CHILD, JSON.stringify({ baseUrl, apiKey: key, scenario })],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  const lines: string[] = [];
  let stderr = '';
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { lines, stderr: () => stderr };
}

/** One gauge of /metrics, summed over its labels matching `labels`. */
async function gauge(name: string, labels = ''): Promise<number> {
  const text = await (
    await fetch(`${baseUrl}/metrics`, { headers: { Authorization: `Bearer ${METRICS_KEY}` } })
  ).text();
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm')))
    if ((match[1] ?? '').includes(labels)) sum += Number(match[2]);
  return sum;
}

async function settled(run: { lines: string[]; stderr: () => string }, prefix: string): Promise<string> {
  return until(() => run.lines.find((line) => line.startsWith(prefix)), {
    what: `"${prefix}" from the client (it printed ${JSON.stringify(run.lines)}; stderr ${run.stderr()})`,
    timeoutMs: 15_000,
  });
}

describe('cancelling after a garbage collection in the client process', () => {
  it('aborting agent.events({ signal }) ends the iteration and closes the stream on the service', async () => {
    const run = client('events');
    await settled(run, 'settled events');
    expect(run.lines).toContain('event tool.call');
    await until(async () => (await gauge('dsh_sse_streams_open', 'kind="events"')) === 0, {
      what: 'the service to close the event stream',
    });
  });

  it('onRequest().stop() settles and closes its stream', async () => {
    const run = client('onRequest');
    await settled(run, 'settled onRequest');
    expect(run.lines).toContain('answered');
    await until(async () => (await gauge('dsh_sse_streams_open', 'kind="events"')) === 0, {
      what: 'the service to close the listener stream',
    });
  });

  for (const scenario of ['batch', 'stream']) {
    it(`aborting agent.batch(…, { signal })${scenario === 'stream' ? ' with onProgress' : ''} rejects it and the service cancels the batch`, async () => {
      const run = client(scenario);
      expect(await settled(run, `settled ${scenario}`)).toBe(`settled ${scenario} rejected AbortError`);
      await until(async () => (await gauge('dsh_call_batches_in_flight')) === 0, {
        what: 'the service to cancel the batch',
      });
      await until(async () => (await store.requests.pending()) === 0, {
        what: 'the remote call to be no longer pending',
      });
    });
  }
});
