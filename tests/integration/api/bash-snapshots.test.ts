// Snapshot checkpoints of bash calls over real HTTP with real containers (issue 36): with the
// tenant's `checkpoints.snapshotBash`, each bash call first snapshots the whole workspace, so a
// rollback across bash calls (files created, changed, removed) leaves the workspace byte-exact as it
// was (every file hashed by the sandbox itself) and says what a restart of the sandbox lost; the
// setting off keeps today's ROLLBACK_UNSAFE; the checkpoint bounds drop the oldest snapshot with its
// file, one larger than the byte bound is not kept, and deleting the agent deletes its snapshots.
// Where workspaces are Docker volumes (no loop devices) the setting is refused: 501 SNAPSHOT_UNSUPPORTED.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { loopWorkspaces } from '../sandbox/fixtures.ts';
import { json, served } from './served.ts';

const service = served('bash-snapshots', { shutdownGraceMs: 300 });

/** The snapshot checkpoints' files on the node's disk (`<workspaces>/.snapshots/ckpt_*.img`). */
const files = async (): Promise<string[]> =>
  (await readdir(join(service.fixture.workspacesDir ?? '', '.snapshots')).catch(() => [] as string[]))
    .filter((f) => f.startsWith('ckpt_'))
    .sort();

async function tenant(server: Running, name: string, checkpoints?: Loose): Promise<string> {
  const key = (await server.store.tenants.createTenant(name)).apiKey;
  if (checkpoints !== undefined) {
    const put = await json(server, key, 'PUT', '/v1/settings', { checkpoints });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
  }
  return key;
}

const agentOf = async (server: Running, key: string): Promise<string> =>
  (await json(server, key, 'POST', '/v1/agents', {})).json.id;

let n = 0;
/** One call (it must succeed); its id and value. */
async function call(server: Running, key: string, id: string, name: string, args: Loose) {
  const callId = `b${++n}`;
  const res = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: callId, name, arguments: args }],
  });
  const result = res.json?.results?.[0];
  expect(result?.ok, JSON.stringify(res.json)).toBe(true);
  return { callId, value: result.value as Loose };
}

const bash = (server: Running, key: string, id: string, command: string) =>
  call(server, key, id, 'bash', { command, description: 'test' });

/** Every file and directory of the workspace with its mode and sha256, as the sandbox sees it. */
const tree = async (server: Running, key: string, id: string): Promise<string> =>
  (
    await bash(
      server,
      key,
      id,
      'find . -path ./.dsh -prune -o -printf \'%y %p %m \' -exec sh -c \'[ -f "$1" ] && sha256sum < "$1" || echo\' _ {} \\; | sort',
    )
  ).value.stdout;

const rollback = (server: Running, key: string, id: string, callId: string) =>
  json(server, key, 'POST', `/v1/agents/${id}/rollback`, { callId });

const checkpoints = async (server: Running, key: string, id: string): Promise<Loose[]> =>
  (await json(server, key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints;

describe.skipIf(!loopWorkspaces)('snapshot checkpoints of bash calls', () => {
  it('rolls bash changes back byte-exact, across tracked writes too, and says what the restart lost', async () => {
    const server = await service.current();
    const key = await tenant(server, 'exact', { snapshotBash: true });
    const id = await agentOf(server, key);
    await bash(
      server,
      key,
      id,
      'echo keep > keep.txt; head -c 100000 /dev/urandom > bin.dat; chmod 640 bin.dat',
    );
    const before = await tree(server, key, id);
    const w = await call(server, key, id, 'write', { file_path: 'a.txt', content: 'one\n' });
    const b1 = await bash(
      server,
      key,
      id,
      'echo new > new.txt; printf more >> a.txt; rm keep.txt; head -c 5000 /dev/urandom >> bin.dat; chmod 600 bin.dat',
    );
    const mid = await tree(server, key, id);
    await bash(server, key, id, 'mkdir -p d/e && echo x > d/e/y; rm new.txt; sleep 600 & echo started');
    expect((await checkpoints(server, key, id)).find((c) => c.callId === b1.callId)).toMatchObject({
      tool: 'bash',
      kind: 'snapshot',
      paths: [],
    });
    expect(await tree(server, key, id)).not.toBe(mid);

    // Back to just before the second bash call: b1's changes stay.
    const second = await rollback(server, key, id, (await checkpoints(server, key, id)).at(-2)?.callId);
    expect(second.status, JSON.stringify(second.json)).toBe(200);
    expect(await tree(server, key, id)).toBe(mid);

    // Back to before the tracked write: every bash change and the write undone, byte-exact.
    const first = await rollback(server, key, id, w.callId);
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json).toMatchObject({
      callId: w.callId,
      restored: [],
      removed: ['/workspace/a.txt'],
      workspace: { fromCall: b1.callId, lost: expect.arrayContaining(['processes', '/tmp', 'terminals']) },
    });
    expect(first.json.undone).toContain(b1.callId);
    expect(await tree(server, key, id)).toBe(before);
    const ps = await bash(server, key, id, 'ps -eo args | grep -c "^sleep 600" || true');
    expect(ps.value.stdout.trim()).toBe('0');
    // The checkpoints from the write on are gone (the tree call just made is the newest).
    const left = (await checkpoints(server, key, id)).map((c) => c.callId);
    expect(left).not.toContain(w.callId);
    expect(left).not.toContain(b1.callId);
  });

  it('with the setting off (the default) bash takes no snapshot and a rollback over its change is ROLLBACK_UNSAFE', async () => {
    const server = await service.current();
    const key = await tenant(server, 'off');
    expect((await json(server, key, 'GET', '/v1/settings')).json.checkpoints.snapshotBash).toBe(false);
    const id = await agentOf(server, key);
    const held = await files();
    const w = await call(server, key, id, 'write', { file_path: 'a.txt', content: 'tracked\n' });
    await bash(server, key, id, 'echo by-bash >> a.txt');
    expect(await files()).toEqual(held);
    expect((await checkpoints(server, key, id)).map((c) => c.tool)).toEqual(['write']);
    const refused = await rollback(server, key, id, w.callId);
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('ROLLBACK_UNSAFE');
    const bad = await json(server, key, 'PUT', '/v1/settings', { checkpoints: { snapshotBash: 'yes' } });
    expect(bad.status).toBe(400);
  });

  it('the bounds drop the oldest snapshot with its file; one past the byte bound is not kept; the agent deleted, its files go', async () => {
    const server = await service.current();
    const key = await tenant(server, 'bounds', { snapshotBash: true, maxCount: 2 });
    const id = await agentOf(server, key);
    const held = await files();
    const b1 = await bash(server, key, id, 'echo 1 > one.txt');
    const b2 = await bash(server, key, id, 'echo 2 > two.txt');
    const b3 = await bash(server, key, id, 'echo 3 > three.txt');
    const list = await checkpoints(server, key, id);
    expect(list.map((c) => c.callId)).toEqual([b2.callId, b3.callId]);
    for (const c of list) expect(c.bytes).toBeGreaterThan(0);
    const mine = (await files()).filter((f) => !held.includes(f));
    expect(mine).toHaveLength(2);
    const dropped = await rollback(server, key, id, b1.callId);
    expect(dropped.json.error.code).toBe('CHECKPOINT_DROPPED');

    // A rollback deletes the snapshots it undid (the one it restored from included).
    expect((await rollback(server, key, id, b3.callId)).status).toBe(200);
    expect((await files()).filter((f) => !held.includes(f))).toHaveLength(1);

    await json(server, key, 'PUT', '/v1/settings', { checkpoints: { snapshotBash: true, maxBytes: 1 } });
    const small = await agentOf(server, key);
    await bash(server, key, small, 'echo too-big > x.txt');
    expect(await checkpoints(server, key, small)).toEqual([]);
    expect((await files()).filter((f) => !held.includes(f))).toHaveLength(1);

    expect((await json(server, key, 'DELETE', `/v1/agents/${id}`)).status).toBe(204);
    expect(await files()).toEqual(held);
  });
});

describe.runIf(!loopWorkspaces)('without loop workspaces', () => {
  it('refuses snapshotBash with 501 SNAPSHOT_UNSUPPORTED', async () => {
    const server = await service.current();
    const key = await tenant(server, 'unsupported');
    const put = await json(server, key, 'PUT', '/v1/settings', { checkpoints: { snapshotBash: true } });
    expect(put.status).toBe(501);
    expect(put.json.error.code).toBe('SNAPSHOT_UNSUPPORTED');
  });
});
