// Workspace snapshots over real HTTP with real containers (issue 36): a snapshot taken while a job
// writes numbered files holds a whole prefix of them (the file system frozen for the copy); an
// agent made from it (`fromSnapshot`) starts with those files and goes its own way (a fork);
// snapshots are listed, deleted (agents made from one keep their copy), counted against the
// tenant's snapshotBytes quota, kept across a restart, and another tenant reads them as unknown.
// Where workspaces are Docker volumes (no loop devices) snapshots answer 501 SNAPSHOT_UNSUPPORTED.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DshClient, isDshError } from '../../../client/index.ts';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { loopWorkspaces } from '../sandbox/fixtures.ts';
import { json, served } from './served.ts';

const ADMIN = 'admin-key-for-the-snapshots-test-0123456789';
const service = served('snapshots', { shutdownGraceMs: 300, adminKey: ADMIN });

/** The snapshot files on the node's disk (loop workspaces: `<workspaces>/.snapshots`). */
const files = async (): Promise<string[]> =>
  (await readdir(join(service.fixture.workspacesDir ?? '', '.snapshots')).catch(() => [] as string[])).sort();

async function tenant(server: Running, name: string): Promise<{ id: string; key: string }> {
  const made = await server.store.tenants.createTenant(name);
  return { id: made.id, key: made.apiKey };
}

async function agentOf(server: Running, key: string, body: Loose = {}): Promise<string> {
  const res = await json(server, key, 'POST', '/v1/agents', body);
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return res.json.id;
}

/** One tool call of the agent through POST /calls; its value (the call must succeed). */
async function tool(server: Running, key: string, id: string, name: string, args: Loose): Promise<Loose> {
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
  });
  const result = res.json?.results?.[0];
  expect(result?.ok, JSON.stringify(res.json)).toBe(true);
  return result.value;
}

const bash = (server: Running, key: string, id: string, command: string, background = false) =>
  tool(server, key, id, 'bash', {
    command,
    description: 'test',
    ...(background ? { run_in_background: true } : {}),
  });

const out = async (server: Running, key: string, id: string, command: string): Promise<string> =>
  String((await bash(server, key, id, command)).stdout).trim();

const snapshot = (server: Running, key: string, id: string) =>
  json(server, key, 'POST', `/v1/agents/${id}/snapshots`);

// Each file f/<n> is 64 KiB of random bytes then its number (8 digits), written under a temporary
// name and renamed: in any instant's file system the files are f/1 … f/k, each whole.
const WRITER =
  'mkdir -p f; i=0; while true; do i=$((i+1)); head -c 65536 /dev/urandom > .t; printf "%08d" $i >> .t; mv .t f/$i; done';
// Prints "k" when f/ holds f/1 … f/k, each whole; else what is wrong.
const CHECK =
  'n=$(ls f | wc -l); for i in $(seq 1 $n); do [ -f f/$i ] || { echo "missing $i of $n"; exit 0; }; ' +
  '[ $(stat -c %s f/$i) = 65544 ] || { echo "size $i"; exit 0; }; [ "$(tail -c 8 f/$i)" = "$(printf %08d $i)" ] || { echo "tail $i"; exit 0; }; done; echo $n';

describe.skipIf(!loopWorkspaces)('snapshots of loop workspaces', () => {
  it('a snapshot under concurrent writes holds a whole prefix; a fork starts from it and goes its own way', async () => {
    const server = await service.current();
    const { key } = await tenant(server, 'fork');
    const a = await agentOf(server, key);
    await out(server, key, a, 'echo before > note.txt');
    await bash(server, key, a, WRITER, true);
    await until(async () => Number(await out(server, key, a, 'ls f 2>/dev/null | wc -l')) >= 30, {
      what: 'the writer well under way',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const taken = await snapshot(server, key, a);
    expect(taken.status, JSON.stringify(taken.json)).toBe(201);
    const snap = taken.json;
    expect(snap).toMatchObject({ agentId: a, node: expect.any(String), sizeBytes: expect.any(Number) });
    expect(snap.bytes).toBeGreaterThan(30 * 65536);
    expect(snap.bytes).toBeLessThan(snap.sizeBytes);

    const b = await agentOf(server, key, { fromSnapshot: snap.id });
    const held = await out(server, key, b, CHECK);
    expect(Number(held), held).toBeGreaterThanOrEqual(30);
    expect(await out(server, key, b, 'cat note.txt')).toBe('before');
    // The writer went on in A after the snapshot; B is its own copy.
    await out(server, key, b, 'echo from-b > b.txt');
    expect(await out(server, key, a, 'cat b.txt 2>&1 || true')).toMatch(/No such file/);
    await out(server, key, a, 'echo after > note.txt');
    expect(await out(server, key, b, 'cat note.txt')).toBe('before');
    const bView = await json(server, key, 'GET', `/v1/agents/${b}`);
    expect(bView.json.config.sandbox.diskMb).toBe(snap.sizeBytes / 1024 ** 2);

    const listed = await json(server, key, 'GET', `/v1/agents/${a}/snapshots`);
    expect(listed.json.snapshots.map((s: Loose) => s.id)).toEqual([snap.id]);
    expect((await json(server, key, 'GET', `/v1/agents/${b}/snapshots`)).json.snapshots).toEqual([]);
    expect((await json(server, key, 'GET', `/v1/snapshots/${snap.id}`)).json).toEqual(snap);
  });

  it('delete: the snapshot is gone, an agent made from it keeps its files, a new one from it is refused', async () => {
    const server = await service.current();
    const { key } = await tenant(server, 'delete');
    const a = await agentOf(server, key);
    await out(server, key, a, 'echo one > one.txt');
    const snap = (await snapshot(server, key, a)).json;
    const b = await agentOf(server, key, { fromSnapshot: snap.id });
    expect(await files()).toContain(`${snap.id}.img`);
    expect((await json(server, key, 'DELETE', `/v1/snapshots/${snap.id}`)).status).toBe(204);
    expect(await files()).not.toContain(`${snap.id}.img`);
    expect((await json(server, key, 'GET', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await json(server, key, 'DELETE', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect(await out(server, key, b, 'cat one.txt')).toBe('one');
    const again = await json(server, key, 'POST', '/v1/agents', { fromSnapshot: snap.id });
    expect(again.status).toBe(404);
    // Deleting the agent it came from leaves a snapshot be; its own agent's list is then 404.
    const kept = (await snapshot(server, key, a)).json;
    expect((await json(server, key, 'DELETE', `/v1/agents/${a}`)).status).toBe(204);
    expect((await json(server, key, 'GET', `/v1/snapshots/${kept.id}`)).status).toBe(200);
    expect((await json(server, key, 'GET', `/v1/agents/${a}/snapshots`)).status).toBe(404);
    expect((await json(server, key, 'GET', '/v1/snapshots')).json.snapshots.map((s: Loose) => s.id)).toEqual([
      kept.id,
    ]);
  });

  it("another tenant's snapshot and agent read as unknown; hostile input is refused", async () => {
    const server = await service.current();
    const owner = await tenant(server, 'owner');
    const other = await tenant(server, 'other');
    const a = await agentOf(server, owner.key);
    const snap = (await snapshot(server, owner.key, a)).json;
    expect((await json(server, other.key, 'GET', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await json(server, other.key, 'DELETE', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await json(server, other.key, 'POST', '/v1/agents', { fromSnapshot: snap.id })).status).toBe(404);
    expect((await snapshot(server, other.key, a)).status).toBe(404);
    expect((await json(server, other.key, 'GET', `/v1/agents/${a}/snapshots`)).status).toBe(404);
    expect((await json(server, other.key, 'GET', '/v1/snapshots')).json.snapshots).toEqual([]);
    expect((await json(server, owner.key, 'GET', `/v1/snapshots/${snap.id}`)).status).toBe(200);
    for (const bad of ['../x', '.snapshots', '', 'a/b', 'x'.repeat(200), 42])
      expect((await json(server, owner.key, 'POST', '/v1/agents', { fromSnapshot: bad })).status).toBe(400);
    expect((await json(server, owner.key, 'GET', '/v1/snapshots/..%2Fx')).status).toBe(404);
    const sized = await json(server, owner.key, 'POST', '/v1/agents', {
      fromSnapshot: snap.id,
      sandbox: { diskMb: snap.sizeBytes / 1024 ** 2 + 1 },
    });
    expect(sized.status).toBe(400);
    expect(sized.json.error.code).toBe('INVALID_ARGUMENTS');
  });

  it("a snapshot past the tenant's snapshotBytes quota is refused and removed; GET /v1/limits shows the use", async () => {
    const server = await service.current();
    const { id: tenantId, key } = await tenant(server, 'quota');
    const a = await agentOf(server, key);
    await out(server, key, a, 'head -c 4000000 /dev/urandom > big.bin');
    const first = (await snapshot(server, key, a)).json;
    await server.store.tenants.setQuotas(tenantId, { snapshotBytes: first.bytes + 1024 });
    const before = await files();
    const refused = await snapshot(server, key, a);
    expect(await files()).toEqual(before);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'snapshotBytes' } });
    const limits = await json(server, key, 'GET', '/v1/limits');
    expect(limits.json).toMatchObject({
      quotas: { snapshotBytes: first.bytes + 1024 },
      usage: { snapshotBytes: first.bytes },
    });
    expect((await json(server, key, 'GET', `/v1/agents/${a}/snapshots`)).json.snapshots).toHaveLength(1);
    expect((await json(server, key, 'DELETE', `/v1/snapshots/${first.id}`)).status).toBe(204);
    expect((await snapshot(server, key, a)).status).toBe(201);
  });

  it('snapshots are kept across a restart, and agents are made from them after it', async () => {
    const first = await service.current();
    const { key } = await tenant(first, 'restart');
    const a = await agentOf(first, key);
    await out(first, key, a, 'echo survived > s.txt');
    const snap = (await snapshot(first, key, a)).json;
    await service.stop(first);
    const second = await service.start();
    expect((await json(second, key, 'GET', `/v1/snapshots/${snap.id}`)).json).toEqual(snap);
    const b = await agentOf(second, key, { fromSnapshot: snap.id });
    expect(await out(second, key, b, 'cat s.txt')).toBe('survived');
  });

  it('subagent_fork with childWorkspace "isolated": the child works in a fork of its parent\'s workspace (a symlink kept, which the tar copy drops)', async () => {
    const server = await service.current();
    const { key } = await tenant(server, 'subagent-fork');
    const parent = await agentOf(server, key, { subagents: true, childWorkspace: 'isolated' });
    await out(server, key, parent, 'echo v1 > app.txt && ln -s app.txt link.txt');
    const before = await files();
    const { agent_id: child } = await tool(server, key, parent, 'subagent_fork', {
      description: 'try another way',
      prompt: 'Change app.txt.',
      run_in_background: true,
    });
    expect(await out(server, key, child, 'readlink link.txt && cat link.txt')).toBe('app.txt\nv1');
    await out(server, key, child, 'echo v2 > app.txt');
    expect(await out(server, key, parent, 'cat app.txt')).toBe('v1');
    // The snapshot it was forked from was the service's own: gone, never listed or counted.
    expect(await files()).toEqual(before);
    expect((await json(server, key, 'GET', '/v1/snapshots')).json.snapshots).toEqual([]);
  });

  it("a tenant's deletion deletes its snapshots and their files", async () => {
    const server = await service.current();
    const gone = await tenant(server, 'gone');
    const a = await agentOf(server, gone.key);
    const snaps = [
      (await snapshot(server, gone.key, a)).json.id,
      (await snapshot(server, gone.key, a)).json.id,
    ];
    expect(await files()).toEqual(expect.arrayContaining(snaps.map((id) => `${id}.img`)));
    expect((await json(server, ADMIN, 'DELETE', `/v1/tenants/${gone.id}`)).status).toBe(202);
    await until(
      async () => (await json(server, ADMIN, 'GET', `/v1/tenants/${gone.id}`)).json.state === 'deleted',
      {
        what: 'the tenant deleted',
        timeoutMs: 60_000,
      },
    );
    for (const id of snaps) expect(await files()).not.toContain(`${id}.img`);
    expect(await server.store.snapshots.list(gone.id)).toEqual([]);
  });

  it('through the typed client: agent.snapshot(), an agent from it, client.snapshots list, get, delete', async () => {
    const server = await service.current();
    const { key } = await tenant(server, 'client');
    const client = new DshClient({ baseUrl: server.url, apiKey: key });
    const a = await client.agents.create();
    await a.call('write', { file_path: 'c.txt', content: 'client' });
    const snap = await a.snapshot();
    expect(await a.snapshots()).toEqual([snap]);
    const b = await client.agents.create({ fromSnapshot: snap.id });
    expect(await b.files.readText('c.txt')).toBe('client');
    expect(await client.snapshots.list()).toEqual([snap]);
    expect(await client.snapshots.get(snap.id)).toEqual(snap);
    await client.snapshots.delete(snap.id);
    const error = await client.snapshots.get(snap.id).catch((e: unknown) => e);
    expect(isDshError(error) && error.code).toBe('NOT_FOUND');
  });

  it('a paused agent is snapshotted where it is and stays paused', async () => {
    const server = await service.current();
    const { key } = await tenant(server, 'paused');
    const a = await agentOf(server, key);
    await out(server, key, a, 'echo paused > p.txt');
    expect((await json(server, key, 'POST', `/v1/agents/${a}/pause`)).status).toBe(200);
    const snap = await snapshot(server, key, a);
    expect(snap.status).toBe(201);
    expect((await json(server, key, 'GET', `/v1/agents/${a}`)).json.state.sandbox).toBe('paused');
    const b = await agentOf(server, key, { fromSnapshot: snap.json.id });
    expect(await out(server, key, b, 'cat p.txt')).toBe('paused');
  });
});

it.skipIf(loopWorkspaces)('without loop workspaces a snapshot answers 501 SNAPSHOT_UNSUPPORTED', async () => {
  const server = await service.current();
  const { key } = await tenant(server, 'volumes');
  const a = await agentOf(server, key);
  const res = await snapshot(server, key, a);
  expect(res.status).toBe(501);
  expect(res.json.error.code).toBe('SNAPSHOT_UNSUPPORTED');
});
