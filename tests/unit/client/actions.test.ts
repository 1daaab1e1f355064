// The client's handles for what a person does to a sandbox beside the tools, against the app
// in-process (memory sandbox provider with a scripted `run` and a terminals double): agent.exec,
// agent.files.list and remove, agent.terminals.open/list/close, and the service's error data on DshError.
// tests/integration/client/client.test.ts runs them against real sandboxes.
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  DshClient,
  DshError,
  type ExecResult,
  isDshError,
  type TerminalInfo,
} from '../../../client/index.ts';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { SandboxError } from '../../../host/errors.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { TerminalInfo as Info, SandboxProvider, SandboxTerminals } from '../../../host/sandbox/types.ts';
import { openStore } from '../../../host/store/index.ts';

const open = new Map<string, Info>();
const terms: SandboxTerminals = {
  async open(o = {}) {
    if (o.cwd?.startsWith('..')) throw new SandboxError('PATH_OUTSIDE_WORKSPACE', 'outside');
    const t: Info = {
      id: `t${open.size + 1}`,
      name: o.name ?? null,
      command: o.command ?? ['bash'],
      cwd: '/workspace',
      cols: o.cols ?? 80,
      rows: o.rows ?? 24,
      pid: 7,
      status: 'running',
      exitCode: null,
      signal: null,
      startedAt: 1,
      endedAt: null,
      startOffset: 0,
      endOffset: 0,
      busy: false,
    };
    open.set(t.id, t);
    return t;
  },
  list: async () => [...open.values()],
  close: async (id) => {
    const t = open.get(id) as Info;
    open.delete(id);
    return t;
  },
  write: async () => undefined,
  read: async () => {
    throw new Error('not used');
  },
  resize: async () => {
    throw new Error('not used');
  },
  signal: async () => {
    throw new Error('not used');
  },
  attach: async () => {
    throw new Error('not used');
  },
};

const memory = createMemoryProvider({
  run: async (p) => {
    if (p.command === 'sleep') {
      await new Promise((r) => p.signal.addEventListener('abort', r, { once: true }));
      return undefined;
    }
    p.stdout(`ran ${p.command} in ${p.cwd}\n`);
    return p.command === 'false' ? 1 : 0;
  },
});
const withTerms = <T extends object>(s: T | undefined) => s && { ...s, terminals: terms };
const sandboxes: SandboxProvider = {
  ...memory,
  flags: { ...memory.flags, terminals: true },
  create: async (spec) => withTerms(await memory.create(spec)) as never,
  get: async (id) => withTerms(await memory.get(id)),
};
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes });
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
const inProcess = (request: Request) => Promise.resolve(app.fetch(request));
const client = new DshClient({
  baseUrl: 'http://dsh.test',
  apiKey: (await store.tenants.createTenant('a')).apiKey,
  fetch: inProcess,
});
const stranger = new DshClient({
  baseUrl: 'http://dsh.test',
  apiKey: (await store.tenants.createTenant('b')).apiKey,
  fetch: inProcess,
});

afterAll(async () => {
  await agents.close(0);
  store.close();
});

describe('client actions on a sandbox', () => {
  it('agent.exec answers the exit code and output; a deadline throws EXEC_TIMEOUT', async () => {
    const agent = await client.agents.create({ preset: 'minimal' });
    const ran = await agent.exec('true', { cwd: '.' });
    expectTypeOf(ran).toEqualTypeOf<ExecResult>();
    expect(ran).toMatchObject({ exitCode: 0, stdout: 'ran true in /workspace\n', stdoutTruncated: false });
    expect((await agent.exec('false')).exitCode).toBe(1);
    const late = await agent.exec('sleep', { timeoutMs: 30 }).catch((e: unknown) => e);
    expect(isDshError(late, 'EXEC_TIMEOUT')).toBe(true);
    expect(late).toMatchObject({ status: 504 });
    const outside = await agent.exec('true', { cwd: '../..' }).catch((e: unknown) => e);
    expect(outside).toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE', status: 400 });
    const theirs = await stranger.agents.get(agent.id).catch((e: unknown) => e);
    expect(theirs).toMatchObject({ code: 'NOT_FOUND' });
  });

  it("DshError.data is the service's data of the error", async () => {
    const agent = await client.agents.create();
    const bad = await agent.exec('x', { env: { 'NOT A NAME': 'v' } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(DshError);
    expect((bad as DshError).code).toBe('BAD_REQUEST');
    expect((bad as DshError).data).toMatchObject({ issues: [{ path: expect.stringContaining('env') }] });
    expect((bad as DshError).body).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    // The same from a batch, as JSON and as an event stream's `error` event.
    const calls = [{ name: 'read', arguments: { file_path: 'x' } }];
    for (const options of [{ step: 'gone' }, { step: 'gone', onProgress: () => undefined }]) {
      const stale = await agent.batch(calls, options).catch((e: unknown) => e);
      expect(stale).toMatchObject({ code: 'STEP_NOT_FOUND', data: { step: 'gone' } });
    }
  });

  it('agent.files.list lists a directory; files.remove removes a file, a directory only with recursive, nothing outside', async () => {
    const agent = await client.agents.create();
    await agent.files.write('notes/a.txt', 'a');
    await agent.files.write('b.txt', 'b');
    await agent.files.remove('b.txt');
    await expect(agent.files.readText('b.txt')).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' });
    await expect(agent.files.remove('notes')).rejects.toMatchObject({
      code: 'DIRECTORY_NOT_EMPTY',
      status: 409,
    });
    await expect(agent.files.remove('../notes', { recursive: true })).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
    });
    expect(await agent.files.list()).toMatchObject({
      path: '.',
      entries: [{ name: 'notes', type: 'directory' }],
      truncated: false,
    });
    expect((await agent.files.list('notes')).entries.map((e) => e.name)).toEqual(['a.txt']);
    await expect(agent.files.list('../..')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    await agent.files.remove('notes', { recursive: true });
    await expect(agent.files.readText('notes/a.txt')).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' });
  });

  it('agent.terminals opens, lists and closes terminals', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    const t = await agent.terminals.open({ command: ['python3'], cols: 120, rows: 40, name: 'repl' });
    expectTypeOf(t).toEqualTypeOf<TerminalInfo>();
    expect(t).toMatchObject({ name: 'repl', command: ['python3'], cols: 120, rows: 40, status: 'running' });
    expect((await agent.terminals.list()).map((x) => x.id)).toContain(t.id);
    await agent.terminals.close(t.id);
    expect((await agent.terminals.list()).map((x) => x.id)).not.toContain(t.id);
    await expect(agent.terminals.close(t.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(agent.terminals.open({ cwd: '../x' })).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
    });
  });
});
