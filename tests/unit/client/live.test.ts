// The client's live parts against the service on real loopback HTTP, without Docker (the app
// assembled as serve.ts does, the memory sandbox provider): an event stream cut mid-way by the
// network resumes from the last event it delivered (Last-Event-ID), nothing lost or repeated; a
// consumer that stops closes its connection; onRequest answers several kinds with one handler,
// narrowing each request by its kind; agent.usage() follows what the agent does.
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentEvent, DshClient, textOf } from '../../../client/index.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';

const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider() });
const METRICS_KEY = 'metrics-key-for-tests-0123456789';
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents, metricsKey: METRICS_KEY });
const key = (await store.tenants.createTenant('tenant-a')).apiKey;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  store.close();
});

/** A body that passes `messages` whole SSE messages through, then fails as a dropped connection does. */
const cutAfter = (body: ReadableStream<Uint8Array>, messages: number): ReadableStream<Uint8Array> => {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  let passed = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Erroring drops what is still queued, so the reset comes on the read after the last message.
      if (passed === messages) {
        await reader.cancel();
        return controller.error(new TypeError('terminated: the connection was reset'));
      }
      const { done, value } = await reader.read();
      if (done) return controller.close();
      pending += decoder.decode(value, { stream: true });
      for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
        const message = pending.slice(0, end + 2);
        pending = pending.slice(end + 2);
        controller.enqueue(encoder.encode(message));
        if (message.includes('data:') && ++passed === messages) return;
      }
    },
  });
};

describe('the client on a live service', () => {
  it('resumes an event stream cut by the network from the last event it delivered', async () => {
    const resumedFrom: (string | null)[] = [];
    let cut = false;
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      async fetch(request) {
        const response = await fetch(request);
        if (request.headers.get('accept') !== 'text/event-stream') return response;
        resumedFrom.push(request.headers.get('last-event-id'));
        if (cut || response.body === null) return response;
        cut = true;
        return new Response(cutAfter(response.body, 3), response);
      },
    });
    const agent = await client.agents.create({ preset: 'standard' });
    await agent.batch([
      { name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
      { name: 'write', arguments: { file_path: 'b.txt', content: 'b' } },
    ]);
    const seen: AgentEvent[] = [];
    for await (const event of agent.events({ retryMs: 10 })) {
      seen.push(event);
      if (seen.length === 4) break;
    }
    const { data } = await client.api.GET('/v1/agents/{id}/events', { params: { path: { id: agent.id } } });
    const log = data?.events ?? [];
    expect(log).toHaveLength(4);
    expect(seen).toEqual(log);
    expect(resumedFrom).toEqual(['0', String(log[2]?.seq)]);
  });

  it('a consumer that stops closes its stream', async () => {
    const client = new DshClient({ baseUrl, apiKey: key });
    const agent = await client.agents.create({ preset: 'standard' });
    await agent.call('write', { file_path: 'a.txt', content: 'a' });
    const open = async () =>
      Number(
        /dsh_sse_streams_open\{kind="events"\} (\d+)/.exec(
          await (
            await fetch(`${baseUrl}/metrics`, { headers: { Authorization: `Bearer ${METRICS_KEY}` } })
          ).text(),
        )?.[1] ?? 0,
      );
    for await (const event of agent.events()) {
      expect(await open()).toBe(1);
      expect(event.type).toBe('tool.call');
      break;
    }
    await until(async () => (await open()) === 0, { what: 'the stream to close' });
  });

  it('onRequest answers several kinds with one handler, each request typed by its kind', async () => {
    const client = new DshClient({ baseUrl, apiKey: key });
    const agent = await client.agents.create({
      preset: 'standard',
      remoteTools: [
        {
          name: 'lookup',
          description: 'Looks a word up on the client',
          parameters: { type: 'object', properties: { word: { type: 'string' } } },
        },
      ],
    });
    const kinds: string[] = [];
    const listener = agent.onRequest(['remote_tool', 'user_question'], (request) => {
      kinds.push(request.kind);
      if (request.kind === 'remote_tool') {
        const { word } = request.payload.arguments as { word: string };
        return { result: `${request.payload.toolName}(${word}) = ${word.length} letters` };
      }
      return {
        answers: Object.fromEntries(
          request.payload.questions.map((q) => [q.id, q.options?.[1]?.label ?? 'x']),
        ),
      };
    });
    try {
      const [looked, asked] = await agent.batch([
        { name: 'lookup', arguments: { word: 'sandbox' } },
        {
          name: 'ask_user_question',
          arguments: {
            questions: [
              {
                id: 'db',
                question: 'Which database?',
                options: [{ label: 'sqlite' }, { label: 'postgres' }],
              },
            ],
          },
        },
      ]);
      expect(looked && textOf(looked)).toContain('lookup(sandbox) = 7 letters');
      expect(asked?.value).toEqual({
        answers: [{ id: 'db', question: 'Which database?', answer: ['postgres'] }],
      });
      expect(kinds.sort()).toEqual(['remote_tool', 'user_question']);
    } finally {
      await listener.stop();
    }
  });

  it('onRequest follows the log from its end (or the given seq), still answering what was pending', async () => {
    const resumedFrom: (string | null)[] = [];
    const client = new DshClient({
      baseUrl,
      apiKey: key,
      fetch(request, init) {
        if (request.headers.get('accept') === 'text/event-stream')
          resumedFrom.push(request.headers.get('last-event-id'));
        return fetch(request, init);
      },
    });
    const remoteTools = [
      { name: 'lookup', description: 'Answered by the client', parameters: { type: 'object' } },
    ];
    const agent = await client.agents.create({ preset: 'standard', remoteTools });
    await agent.batch(
      Array.from({ length: 20 }, (_, i) => ({
        name: 'write',
        arguments: { file_path: `f${i}.txt`, content: 'x' },
      })),
    );
    // A call waiting for its answer before any listener runs: the listener answers it from the list.
    const early = agent.call('lookup', { word: 'early' });
    await until(async () => (await agent.requests.list('pending')).length === 1);
    const end = (await agent.usage()).log.events;
    const answered: string[] = [];
    const listener = agent.onRequest('remote_tool', (request) => {
      const { word } = request.payload.arguments as { word: string };
      answered.push(word);
      return { result: word };
    });
    try {
      expect(textOf(await early)).toBe('early');
      expect(textOf(await agent.call('lookup', { word: 'late' }))).toBe('late');
      expect(answered).toEqual(['early', 'late']);
      expect(resumedFrom).toEqual([String(end)]);
    } finally {
      await listener.stop();
    }
    const again = agent.onRequest('remote_tool', () => ({ result: 'x' }), { after: 3 });
    await until(() => resumedFrom.length === 2);
    await again.stop();
    expect(resumedFrom[1]).toBe('3');
  });

  it("agent.usage() shows the agent's sandbox, calls and disk as they change", async () => {
    const client = new DshClient({ baseUrl, apiKey: key });
    const agent = await client.agents.create({ preset: 'standard', sandbox: { diskMb: 16 } });
    const fresh = await agent.usage();
    expect(fresh.state.sandbox).toBe('none');
    expect(fresh.log.calls).toBe(0);
    await agent.call('write', { file_path: 'a.txt', content: 'hello' });
    const used = await agent.usage();
    expect(used.state.sandbox).toBe('ready');
    expect(used.log.calls).toBe(1);
    const disk: { usedBytes: number; limitBytes: number } | undefined = used.disk;
    expect(disk).toEqual({ usedBytes: 5, limitBytes: 16 * 1024 * 1024 });
  });
});
