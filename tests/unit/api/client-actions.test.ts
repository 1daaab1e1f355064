// What a client does to an agent's sandbox beside the tools (issue 20: the typed client found these
// missing from the API): run a command (POST /exec), delete a file or directory (DELETE /files),
// open, list and close terminals. Over the memory provider with a scripted `run` and a terminals
// double; tests/integration/client/client.test.ts runs the same against real sandboxes. Each is
// confined like the other file routes, 404 for another tenant's agent, bounded, and audited in the
// agent's log (client.<action>, then client.result) without the secrets it was given.
import { afterEach, describe, expect, it } from 'vitest';
import { EXEC_OUTPUT_BYTES } from '../../../host/api/routes/exec.ts';
import { createMemoryProvider, type MemoryRun } from '../../../host/sandbox/memory/provider.ts';
import type { SandboxProvider, SandboxTerminals, TerminalInfo } from '../../../host/sandbox/types.ts';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

/** Commands the scripted sandbox knows, by their first word. */
const run: MemoryRun = async (p) => {
  const [word, ...rest] = p.command.split(' ');
  if (word === 'echo') p.stdout(`${rest.join(' ')}\n`);
  else if (word === 'cat') p.stdout(p.stdin);
  else if (word === 'env') p.stdout(`${p.env[rest[0] ?? ''] ?? ''}\n`);
  else if (word === 'pwd') p.stdout(`${p.cwd}\n`);
  else if (word === 'fail') {
    p.stderr('it failed\n');
    return 3;
  } else if (word === 'flood') p.stdout(Buffer.alloc(EXEC_OUTPUT_BYTES + 4096, 'y'));
  else if (word === 'hang') {
    started.push(p.command);
    await new Promise((resolve) => p.signal.addEventListener('abort', resolve, { once: true }));
    killed.push(p.command);
  } else return 127;
  return 0;
};
let started: string[] = [];
let killed: string[] = [];

const info = (id: string, over: Partial<TerminalInfo> = {}): TerminalInfo => ({
  id,
  name: null,
  command: ['bash'],
  cwd: '/workspace',
  cols: 80,
  rows: 24,
  pid: 42,
  status: 'running',
  exitCode: null,
  signal: null,
  startedAt: 1,
  endedAt: null,
  startOffset: 0,
  endOffset: 0,
  busy: false,
  ...over,
});

/** Terminals kept in a Map; open refuses a 17th running one as sandboxd does. */
const terminalsDouble = () => {
  const all = new Map<string, TerminalInfo>();
  let next = 0;
  const terms: SandboxTerminals = {
    async open(o = {}) {
      if ([...all.values()].filter((t) => t.status === 'running').length >= 16) {
        const { SandboxError } = await import('../../../host/errors.ts');
        throw new SandboxError('LIMIT_EXCEEDED', 'At most 16 terminals can run at once; close one first.');
      }
      const t = info(`t${++next}`, {
        command: o.command ?? ['bash'],
        cols: o.cols ?? 80,
        rows: o.rows ?? 24,
        name: o.name ?? null,
        ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
      });
      all.set(t.id, t);
      return t;
    },
    list: async () => [...all.values()],
    write: async () => undefined,
    read: async (id) => ({ ...info(id), data: Buffer.alloc(0), offset: 0, nextOffset: 0, dropped: 0 }),
    resize: async (id) => info(id),
    signal: async (id) => info(id),
    async close(id) {
      const t = all.get(id) ?? info(id);
      all.delete(id);
      return { ...t, status: 'exited' };
    },
    attach: async (id) => info(id),
  };
  return { terms, all };
};

let api: Api;
let terms: ReturnType<typeof terminalsDouble>;
const start = async (logBudgetBytes?: number) => {
  started = [];
  killed = [];
  terms = terminalsDouble();
  const memory = createMemoryProvider({ run });
  const withTerms = <T extends object>(s: T | undefined) => s && { ...s, terminals: terms.terms };
  const sandboxes: SandboxProvider = {
    ...memory,
    flags: { ...memory.flags, terminals: true },
    create: async (spec) => withTerms(await memory.create(spec)) as never,
    get: async (id) => withTerms(await memory.get(id)),
  };
  api = await makeApi(
    { maxJsonBytes: 64 * 1024 },
    { sandboxes, ...(logBudgetBytes === undefined ? {} : { store: { logBudgetBytes } }) },
  );
};
afterEach(() => api.close());

/** The agent's `client.*` events, as the audit timeline reads them. */
const clientEvents = async (key: string, id: string): Promise<Loose[]> => {
  const page = await api.request(key, 'GET', `/v1/agents/${id}/events?limit=5000`);
  return page.json.events.filter((e: Loose) => e.type.startsWith('client.'));
};

describe('POST /v1/agents/:id/exec', () => {
  it('runs a command as the agent and answers its exit code and output', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const ok = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'echo hi there',
    });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({
      exitCode: 0,
      stdout: 'hi there\n',
      stderr: '',
      stdoutTruncated: false,
      stderrTruncated: false,
    });
    expect(typeof ok.json.durationMs).toBe('number');
    const failed = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'fail' });
    expect(failed.json).toMatchObject({ exitCode: 3, stderr: 'it failed\n' });
    const piped = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'cat',
      stdin: 'from stdin',
    });
    expect(piped.json.stdout).toBe('from stdin');
    await api.request(api.keyA, 'PUT', `/v1/agents/${agent.id}/files?path=sub/x`, 'x', {
      'Content-Type': 'application/octet-stream',
    });
    const inSub = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'pwd',
      cwd: 'sub',
    });
    expect(inSub.json.stdout).toBe('/workspace/sub\n');
  });

  it('records the run in the log before it starts, and never the values of env or stdin', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'env TOKEN',
      env: { TOKEN: 'hunter2-secret' },
      stdin: 'stdin-secret',
    });
    expect(res.json.stdout).toBe('hunter2-secret\n');
    const events = await clientEvents(api.keyA, agent.id);
    expect(events.map((e) => e.type)).toEqual(['client.exec', 'client.result']);
    const [begun, ended] = events;
    expect(begun.surface).toBe('log-only');
    expect(begun.callId).toMatch(/^client:/);
    expect(ended.callId).toBe(begun.callId);
    expect(begun.data).toMatchObject({ command: 'env TOKEN', envNames: ['TOKEN'], stdinBytes: 12 });
    expect(ended.data).toMatchObject({ action: 'exec', ok: true, exitCode: 0, stdoutBytes: 15 });
    expect(JSON.stringify(events)).not.toMatch(/hunter2|stdin-secret/);
  });

  it('keeps at most 1 MiB of each stream and says which was cut', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'flood' });
    expect(res.status).toBe(200);
    expect(res.json.stdout.length).toBe(EXEC_OUTPUT_BYTES);
    expect(res.json).toMatchObject({ stdoutTruncated: true, stderrTruncated: false });
  });

  it('kills a command at its timeoutMs and answers EXEC_TIMEOUT, recorded as failed', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'hang on',
      timeoutMs: 50,
    });
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('EXEC_TIMEOUT');
    expect(killed).toEqual(['hang on']);
    const ended = (await clientEvents(api.keyA, agent.id)).at(-1);
    expect(ended.data).toMatchObject({ action: 'exec', ok: false, error: { code: 'EXEC_TIMEOUT' } });
  });

  it('kills the command when the agent is deleted, and runs nothing for a deleted agent', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const running = api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'hang long' });
    await until(() => started.length === 1);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    const res = await running;
    expect(res.status).toBe(404);
    expect(killed).toEqual(['hang long']);
    const after = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'echo x' });
    expect(after.status).toBe(404);
  });

  it("refuses hostile input: another tenant's agent, a cwd outside, bad env, a huge body", async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const url = `/v1/agents/${agent.id}/exec`;
    const other = await api.request(api.keyB, 'POST', url, { command: 'echo x' });
    expect(other.status).toBe(404);
    expect(other.json.error.code).toBe('NOT_FOUND');
    for (const cwd of ['../etc', '/etc', 'a/../../etc']) {
      const res = await api.request(api.keyA, 'POST', url, { command: 'pwd', cwd });
      expect([res.status, res.json.error.code]).toEqual([400, 'PATH_OUTSIDE_WORKSPACE']);
    }
    const badEnv = await api.request(api.keyA, 'POST', url, { command: 'x', env: { 'A=B': '1' } });
    expect(badEnv.status).toBe(400);
    expect(badEnv.json.error.data.issues[0].path).toContain('env');
    const nul = await api.request(api.keyA, 'POST', url, { command: 'echo \0' });
    expect(nul.status).toBe(400);
    const unknown = await api.request(api.keyA, 'POST', url, { command: 'echo', argv: ['x'] });
    expect(unknown.status).toBe(400);
    const huge = await api.request(api.keyA, 'POST', url, { command: 'cat', stdin: 'x'.repeat(70_000) });
    expect(huge.status).toBe(413);
    const tooLong = await api.request(api.keyA, 'POST', url, { command: 'echo', timeoutMs: 10 * 60_000 + 1 });
    expect(tooLong.status).toBe(400);
    // Nothing that was refused ran or was recorded as run.
    expect((await clientEvents(api.keyA, agent.id)).filter((e) => e.type === 'client.exec')).toHaveLength(3);
  });

  it('runs nothing that the log cannot record (a tenant over its log budget)', async () => {
    await start(16 * 1024);
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: `hang ${'x'.repeat(40_000)}`,
    });
    expect([res.status, res.json.error.code]).toEqual([507, 'STORE_BUDGET_EXCEEDED']);
    expect(started).toEqual([]);
    // What fits is still run and recorded.
    const small = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, {
      command: 'echo fits',
    });
    expect(small.json.stdout).toBe('fits\n');
  });

  it("holds one of the tenant's request slots while it runs; so do file and terminal DELETEs", async () => {
    started = [];
    killed = [];
    const memory = createMemoryProvider({ run });
    api = await makeApi({ tenantConcurrency: 1 }, { sandboxes: memory });
    const agent = await api.createAgent(api.keyA);
    const running = api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'hang slot' });
    await until(() => started.length === 1);
    const files = await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}/files?path=x`);
    expect([files.status, files.json.error.code]).toEqual([429, 'RATE_LIMITED']);
    const term = await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}/terminals/t1`);
    expect(term.status).toBe(429);
    // Deleting the agent takes no slot: it is how a tenant stops what holds them.
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    expect((await running).status).toBe(404);
  });

  it("is the operator's action: the agent's tool policy does not apply", async () => {
    await start();
    const agent = await api.createAgent(api.keyA, { policy: { deny: ['bash'], planMode: true } });
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/exec`, { command: 'echo ran' });
    expect(res.json.stdout).toBe('ran\n');
  });
});

describe('DELETE /v1/agents/:id/files', () => {
  const put = (id: string, path: string) =>
    api.request(api.keyA, 'PUT', `/v1/agents/${id}/files?path=${encodeURIComponent(path)}`, 'data', {
      'Content-Type': 'application/octet-stream',
    });
  const del = (key: string, id: string, query: string) =>
    api.request(key, 'DELETE', `/v1/agents/${id}/files?${query}`);

  it('removes a file, and a directory with its contents only when recursive', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    await put(agent.id, 'a.txt');
    await put(agent.id, 'dir/inner/b.txt');
    expect((await del(api.keyA, agent.id, 'path=a.txt')).status).toBe(204);
    const gone = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/files?path=a.txt`);
    expect(gone.json.error.code).toBe('FILE_NOT_FOUND');
    const full = await del(api.keyA, agent.id, 'path=dir');
    expect([full.status, full.json.error.code]).toEqual([409, 'DIRECTORY_NOT_EMPTY']);
    expect((await del(api.keyA, agent.id, 'path=dir&recursive=true')).status).toBe(204);
    const missing = await del(api.keyA, agent.id, 'path=dir');
    expect([missing.status, missing.json.error.code]).toEqual([404, 'FILE_NOT_FOUND']);
    const events = await clientEvents(api.keyA, agent.id);
    const deletes = events.filter((e) => e.type === 'client.file_delete').map((e) => e.data);
    expect(deletes).toEqual([
      { path: 'a.txt', recursive: false },
      { path: 'dir', recursive: false },
      { path: 'dir', recursive: true },
      { path: 'dir', recursive: false },
    ]);
  });

  it("refuses paths outside the workspace, the root itself, and another tenant's agent", async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    await put(agent.id, 'keep.txt');
    for (const path of ['../etc/passwd', '/etc/passwd', 'x/../../etc', '..']) {
      const res = await del(api.keyA, agent.id, `path=${encodeURIComponent(path)}&recursive=true`);
      expect([res.status, res.json.error.code]).toEqual([400, 'PATH_OUTSIDE_WORKSPACE']);
    }
    for (const path of ['.', '/workspace', 'sub/..']) {
      const res = await del(api.keyA, agent.id, `path=${encodeURIComponent(path)}&recursive=true`);
      expect([res.status, res.json.error.code]).toEqual([409, 'CONFLICT']);
    }
    const other = await del(api.keyB, agent.id, 'path=keep.txt');
    expect(other.status).toBe(404);
    expect((await del(api.keyA, agent.id, 'path=keep.txt&recursive=yes')).status).toBe(400);
    expect((await del(api.keyA, agent.id, 'recursive=true')).status).toBe(400);
    const kept = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/files?path=keep.txt`);
    expect(kept.text).toBe('data');
  });

  it('uploads are in the log too, with what was written', async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    await put(agent.id, 'up.txt');
    const events = await clientEvents(api.keyA, agent.id);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['client.file_write', { path: 'up.txt' }],
      ['client.result', { action: 'file_write', ok: true, path: '/workspace/up.txt', bytes: 4 }],
    ]);
    const outside = await put(agent.id, '../up.txt');
    expect(outside.status).toBe(400);
    const failed = (await clientEvents(api.keyA, agent.id)).at(-1);
    expect(failed.data).toMatchObject({ ok: false, error: { code: 'PATH_OUTSIDE_WORKSPACE' } });
  });
});

describe('terminals from the client', () => {
  it('opens, lists and closes a terminal, in any preset', async () => {
    await start();
    const agent = await api.createAgent(api.keyA, { preset: 'standard' });
    const base = `/v1/agents/${agent.id}/terminals`;
    const opened = await api.request(api.keyA, 'POST', base, {
      command: ['python3'],
      cols: 100,
      rows: 30,
      cwd: 'src',
    });
    expect(opened.status).toBe(201);
    expect(opened.json).toMatchObject({
      id: 't1',
      command: ['python3'],
      cols: 100,
      rows: 30,
      status: 'running',
    });
    expect(opened.json.pid).toBeUndefined();
    expect(opened.headers.get('location')).toBe(`${base}/t1`);
    const listed = await api.request(api.keyA, 'GET', base);
    expect(listed.json.terminals.map((t: Loose) => t.id)).toEqual(['t1']);
    expect((await api.request(api.keyA, 'DELETE', `${base}/t1`)).status).toBe(204);
    expect((await api.request(api.keyA, 'GET', base)).json.terminals).toEqual([]);
    const again = await api.request(api.keyA, 'DELETE', `${base}/t1`);
    expect([again.status, again.json.error.code]).toEqual([404, 'NOT_FOUND']);
    const types = (await clientEvents(api.keyA, agent.id)).map((e) => e.type);
    expect(types).toEqual([
      'client.terminal_open',
      'client.result',
      'client.terminal_close',
      'client.result',
    ]);
  });

  it("keeps the sandbox's limit and refuses hostile input and another tenant's agent", async () => {
    await start();
    const agent = await api.createAgent(api.keyA);
    const base = `/v1/agents/${agent.id}/terminals`;
    for (let i = 0; i < 16; i++) expect((await api.request(api.keyA, 'POST', base, {})).status).toBe(201);
    const over = await api.request(api.keyA, 'POST', base, {});
    expect([over.status, over.json.error.code]).toEqual([400, 'LIMIT_EXCEEDED']);
    expect((await api.request(api.keyB, 'GET', base)).status).toBe(404);
    expect((await api.request(api.keyB, 'POST', base, {})).status).toBe(404);
    expect((await api.request(api.keyB, 'DELETE', `${base}/t1`)).status).toBe(404);
    expect(terms.all.has('t1')).toBe(true);
    for (const body of [
      { cols: 0 },
      { rows: 5000 },
      { command: [] },
      { command: 'bash' },
      { name: '../x' },
      { x: 1 },
    ]) {
      expect((await api.request(api.keyA, 'POST', base, body)).status).toBe(400);
    }
    expect((await api.request(api.keyA, 'DELETE', `${base}/..%2F..`)).status).toBe(404);
  });

  it('answers SANDBOX_UNAVAILABLE where the provider has no terminals', async () => {
    api = await makeApi();
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/terminals`, {});
    expect([res.status, res.json.error.code]).toEqual([503, 'SANDBOX_UNAVAILABLE']);
  });
});
