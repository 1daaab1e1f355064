// What a person does to a real sandbox through the client beside the tools (issue 20's gaps):
// agent.exec runs as the agent in its container, bounded and killed at its deadline with its
// process group; files.list and files.remove stay inside the workspace whatever symlinks the agent
// planted; terminals open in a preset without terminal tools, are typed into, listed and closed;
// each action is in the agent's log; another tenant's agent is NOT_FOUND.
import { beforeAll, describe, expect, it } from 'vitest';
import { type DshAgent, DshClient, isDshError } from '../../../client/index.ts';
import type { Running } from '../../../host/serve.ts';
import { served } from '../api/served.ts';
import { readUntil } from './terminal-read.ts';

const service = served('client-actions');
let server: Running;
let client: DshClient;
let stranger: DshClient;

beforeAll(async () => {
  server = await service.start();
  client = new DshClient({
    baseUrl: server.url,
    apiKey: (await server.store.tenants.createTenant('a')).apiKey,
  });
  stranger = new DshClient({
    baseUrl: server.url,
    apiKey: (await server.store.tenants.createTenant('b')).apiKey,
  });
});

const clientEventTypes = async (agent: DshAgent): Promise<string[]> => {
  const types: string[] = [];
  const page = await client.api.GET('/v1/agents/{id}/events', {
    params: { path: { id: agent.id }, query: { limit: 5000 } },
  });
  for (const e of page.data?.events ?? []) if (e.type.startsWith('client.')) types.push(e.type);
  return types;
};

describe('client actions on a real sandbox', () => {
  it('exec runs bash -c as the agent, with cwd, env and stdin; output is bounded', async () => {
    const agent = await client.agents.create({ preset: 'standard', policy: { deny: ['bash'] } });
    const who = await agent.exec('id -u; id -g; pwd', {});
    expect(who).toMatchObject({ exitCode: 0, stdout: '1000\n1000\n/workspace\n', stderr: '' });
    await agent.files.write('src/in.txt', 'x');
    const piped = await agent.exec('tr a-z A-Z | tee out.txt && echo "$GREETING" >&2 && exit 7', {
      cwd: 'src',
      env: { GREETING: 'hello env' },
      stdin: 'from stdin',
    });
    expect(piped).toMatchObject({ exitCode: 7, stdout: 'FROM STDIN', stderr: 'hello env\n' });
    expect(await agent.files.readText('src/out.txt')).toBe('FROM STDIN');
    const flood = await agent.exec("head -c 3000000 /dev/zero | tr '\\0' y; echo done >&2");
    expect(flood.stdout.length).toBe(1024 * 1024);
    expect(flood).toMatchObject({ stdoutTruncated: true, stderrTruncated: false, stderr: 'done\n' });
    expect(await clientEventTypes(agent)).toContain('client.exec');
  });

  it('kills a command and its children at timeoutMs: EXEC_TIMEOUT', async () => {
    const agent = await client.agents.create();
    const late = await agent
      .exec('sleep 300 & sleep 301; echo never', { timeoutMs: 1000 })
      .catch((e: unknown) => e);
    expect(isDshError(late, 'EXEC_TIMEOUT')).toBe(true);
    const left = await agent.exec('pgrep -f "sleep 30[01]" || echo none');
    expect(left.stdout).toBe('none\n');
  });

  it('list and remove stay in the workspace; a symlink out is removed itself, never followed', async () => {
    const agent = await client.agents.create();
    await agent.exec('ln -s /etc out && mkdir -p d/e && touch d/e/f keep');
    expect((await agent.files.list('.')).entries.map((e) => [e.name, e.type])).toEqual([
      ['d', 'directory'],
      ['keep', 'file'],
      ['out', 'symlink'],
    ]);
    for (const path of ['out/passwd', '../etc/passwd', '/etc/passwd']) {
      await expect(agent.files.remove(path)).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    }
    await expect(agent.exec('pwd', { cwd: 'out' })).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    await expect(agent.files.list('out')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    await agent.files.remove('out', { recursive: true });
    expect((await agent.exec('test -f /etc/passwd && echo intact')).stdout).toBe('intact\n');
    await expect(agent.files.remove('d')).rejects.toMatchObject({ code: 'DIRECTORY_NOT_EMPTY' });
    await agent.files.remove('d', { recursive: true });
    await expect(agent.files.remove('.', { recursive: true })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await agent.files.list('.')).entries.map((e) => e.name)).toEqual(['keep']);
    await expect(stranger.agents.get(agent.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const theirs = new DshClient({ baseUrl: server.url, apiKey: 'x' });
    await expect(theirs.agents.get(agent.id)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('opens a terminal in a preset without terminal tools, types into it, lists and closes it', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    expect((await agent.tools()).map((t) => t.name)).not.toContain('terminal_open');
    const opened = await agent.terminals.open({ cols: 100, rows: 30, name: 'ops' });
    expect(opened).toMatchObject({ name: 'ops', command: ['bash'], status: 'running', cols: 100 });
    const terminal = await agent.terminal(opened.id);
    const writer = terminal.writable.getWriter();
    await writer.write('stty size; echo "$((40 + 2))-from-client"\r');
    expect(await readUntil(terminal, /42-from-client/)).toContain('30 100');
    writer.releaseLock();
    expect((await agent.terminals.list()).map((t) => t.id)).toContain(opened.id);
    await agent.terminals.close(opened.id);
    expect((await terminal.closed).code).toBe(1000);
    expect((await agent.terminals.list()).map((t) => t.id)).not.toContain(opened.id);
    await expect(agent.terminals.open({ cwd: '../..' })).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
    });
    const types = await clientEventTypes(agent);
    expect(types).toEqual(expect.arrayContaining(['client.terminal_open', 'client.terminal_close']));
  });
});
