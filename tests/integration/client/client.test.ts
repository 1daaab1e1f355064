// @dsh-sandbox/client against the real service (the composition `serve` runs, real Docker
// sandboxes), started by this test on a port of its own so that it can be restarted in place:
// agents, files both ways, a call and a batch, typed errors, an `ask` approval answered by
// onRequest, a terminal typed into over its WebSocket, and the event log followed across a
// restart of the service with nothing lost or repeated.
import { createServer } from 'node:net';
import { Duplex } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentEvent,
  DshClient,
  DshError,
  DshToolError,
  isDshError,
  textOf,
} from '../../../client/index.ts';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import { served } from '../api/served.ts';
import { readUntil } from './terminal-read.ts';

/** A port nobody listens on now, so that a restarted service comes back at the same URL. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const service = served('client', { port: await freePort(), shutdownGraceMs: 300 });
let server: Running;
let client: DshClient;

beforeAll(async () => {
  server = await service.start();
  const key = (await server.store.tenants.createTenant('client')).apiKey;
  client = new DshClient({ baseUrl: server.url, apiKey: key });
});

describe('@dsh-sandbox/client on a real service', () => {
  it('creates, gets, lists and deletes agents; refusals are typed DshErrors', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    expect(agent.info).toMatchObject({ id: agent.id, preset: 'standard' });
    expect((await client.agents.get(agent.id)).info.sessionId).toBe(agent.info.sessionId);
    expect((await client.agents.list()).map((a) => a.id)).toContain(agent.id);
    expect((await agent.tools()).map((t) => t.name)).toContain('bash');

    await agent.delete();
    const missing = await client.agents.get(agent.id).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(DshError);
    expect(missing).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    await expect(client.agents.delete(agent.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    const stranger = new DshClient({ baseUrl: server.url, apiKey: 'dsh_not_a_key' });
    await expect(stranger.agents.list()).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
  });

  it('moves files as text, bytes, streams and tar archives', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    expect(await agent.files.write('notes/hello.txt', 'hello from the client\n')).toMatchObject({
      bytes: 22,
    });
    expect(await agent.files.readText('notes/hello.txt')).toBe('hello from the client\n');

    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    await agent.files.write('notes/all.bin', bytes);
    expect(await agent.files.read('notes/all.bin')).toEqual(bytes);
    await agent.files.write(
      'notes/streamed.txt',
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of ['one ', 'two ', 'three']) controller.enqueue(new TextEncoder().encode(part));
          controller.close();
        },
      }),
    );
    expect(await new Response(await agent.files.download('notes/streamed.txt')).text()).toBe('one two three');

    // A directory out as tar and back in elsewhere.
    const tar = new Uint8Array(await new Response(await agent.files.downloadArchive('notes')).arrayBuffer());
    expect(await agent.files.uploadArchive('copy', tar)).toMatchObject({ files: 3 });
    expect(await agent.files.readText('copy/hello.txt')).toBe('hello from the client\n');
    expect(await agent.files.read('copy/all.bin')).toEqual(bytes);

    await expect(agent.files.read('../etc/passwd')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    await expect(agent.files.read('no/such/file')).rejects.toBeInstanceOf(DshError);
  });

  it('runs a call and a batch; an unknown tool is a typed DshToolError', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    const echoed = await agent.call('bash', { command: 'echo $((6 * 7))', description: 'compute' });
    expect(echoed.ok).toBe(true);
    expect(textOf(echoed)).toContain('42');

    const progress: AgentEvent[] = [];
    const results = await agent.batch(
      [
        { id: 'w', name: 'write', arguments: { file_path: 'b.txt', content: 'batched\n' } },
        { name: 'no_such_tool', arguments: {} },
      ],
      { onProgress: (event) => progress.push(event) },
    );
    expect(results.map((r) => [r.id, r.ok, r.error?.code])).toEqual([
      ['w', true, undefined],
      ['c2', false, 'UNKNOWN_TOOL'],
    ]);
    expect(progress.some((e) => e.type === 'tool.result' && e.callId === 'w')).toBe(true);
    expect(await agent.files.readText('b.txt')).toBe('batched\n');

    const failed = await agent.call('no_such_tool').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DshToolError);
    expect(failed).toMatchObject({ code: 'UNKNOWN_TOOL', result: { ok: false, name: 'no_such_tool' } });
    if (isDshError(failed, 'UNKNOWN_TOOL')) expect(failed.message).toMatch(/no_such_tool/);
  });

  it('answers `ask` approvals with onRequest: one allowed, one denied', async () => {
    const agent = await client.agents.create({ preset: 'standard', policy: { ask: ['bash'] } });
    const asked: string[] = [];
    const listener = agent.onRequest('approval', (request) => {
      const { command } = request.payload.arguments as { command: string };
      asked.push(`${request.payload.toolName}: ${command}`);
      return command.includes('forbidden') ? { allow: false, reason: 'not that one' } : { allow: true };
    });
    try {
      const allowed = await agent.call('bash', { command: 'echo permitted', description: 'allowed' });
      expect(textOf(allowed)).toContain('permitted');
      const denied = await agent
        .call('bash', { command: 'echo forbidden', description: 'denied' })
        .catch((e: unknown) => e);
      expect(denied).toMatchObject({ code: 'DENIED' });
      expect((denied as DshToolError).message).toContain('not that one');
      expect(asked).toEqual(['bash: echo permitted', 'bash: echo forbidden']);
      expect((await agent.requests.list('answered')).map((r) => r.kind)).toEqual(['approval', 'approval']);
    } finally {
      await listener.stop();
    }
  });

  it('types into a terminal and reads its output over the WebSocket', async () => {
    const agent = await client.agents.create({ preset: 'creator' });
    const opened = await agent.call('terminal_open', { type: 'bash' });
    const { sessionId } = opened.value as { sessionId: string };
    const terminal = await agent.terminal(sessionId);
    terminal.resize(100, 30);
    const writer = terminal.writable.getWriter();
    await writer.write('stty size; echo "$((20 + 22))-typed"\r');
    const output = await readUntil(terminal, /42-typed/);
    expect(output).toContain('30 100');
    writer.releaseLock();
    terminal.close();
    expect((await terminal.closed).code).toBe(1000);

    // Attached again as a Node Duplex: the buffered output is replayed from the offset asked for.
    const again = Duplex.fromWeb(await agent.terminal(sessionId, { offset: 0 }));
    let replay = '';
    for await (const chunk of again) {
      replay += String(chunk);
      if (replay.includes('42-typed')) break;
    }
    expect(replay).toContain('42-typed');

    await expect(agent.terminal('no-such-terminal')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  // Last: it restarts the service.
  it('follows events live and resumes after the service restarts, nothing lost or repeated', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    await agent.call('bash', { command: 'echo before', description: 'before the restart' });
    const seen: AgentEvent[] = [];
    const following = (async () => {
      for await (const event of agent.events({ retryMs: 100 })) {
        seen.push(event);
        if (event.type === 'tool.result' && event.callId === 'after') return;
      }
    })();
    await until(() => seen.some((e) => e.type === 'tool.result'), { what: 'the replay', timeoutMs: 30_000 });

    await service.stop(server);
    server = await service.start();
    const [after] = await agent.batch([
      { id: 'after', name: 'bash', arguments: { command: 'echo after', description: 'after the restart' } },
    ]);
    expect(after?.ok).toBe(true);
    await following;

    const { data } = await client.api.GET('/v1/agents/{id}/events', { params: { path: { id: agent.id } } });
    expect(seen.map((e) => e.seq)).toEqual((data?.events ?? []).map((e) => e.seq));
    expect(seen.filter((e) => e.type === 'tool.result').map((e) => e.callId)).toEqual(['c1', 'after']);
  });
});
