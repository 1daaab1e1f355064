// Snapshots across two remote nodes (docs/nodes.md, "Snapshots on several nodes"): two private
// Docker engines (./engine.ts), a node agent on each with loop workspaces under its own data folder
// (./cluster.ts `loop`), and a control plane whose DSH_NODES names both. A snapshot is taken on its
// agent's node (its file on that node's disk, its `node` that node's name); an agent made from it
// lands on that node although the other is emptier, with the snapshot's files byte for byte; its
// file is in the folder of the control plane's instance (`.snapshots/<instance>`), and another
// instance on that node (its own certificate) that knows the id can neither make a workspace from
// it nor drop or overwrite it (the copy made after still has its files); a node agent holding a
// flat file of an older version says so at start; while that node is cordoned, POST /v1/agents
// with `fromSnapshot` answers 503 NODE_CORDONED naming it and makes nothing; a deleted snapshot's
// file leaves that node's disk. The control plane's start removes the old files of its own folder
// on a node that no record names (never a young one, never another instance's), and a node agent's
// start the temporary files an older version's crashed copies left flat; a node that answers
// again (killed, then restarted) is swept then.
// Skipped where loop workspaces cannot be made (not root, no loop devices: fixtures.ts).
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_AGENT, LABEL_INSTANCE } from '../../../host/sandbox/docker/index.ts';
import { connectRemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { tlsOf } from '../../helpers/node-tls.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json } from '../api/served.ts';
import { loopWorkspaces, sandboxImage } from '../sandbox/fixtures.ts';
import { certifyControlPlane, controlPlaneConfig, type NodeAgent, startNodeAgent } from './cluster.ts';
import { type Engine, startEngine } from './engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-nodesnap-'));
const ca = join(dir, 'ca');
const engines: Record<string, Engine> = {};
const nodeAgents: Record<string, NodeAgent> = {};
let running: Running | undefined;
let key = '';
const ADMIN = 'admin-key-of-the-node-snapshot-test';

/** The snapshot's file on the node agent's disk (its loop workspaces' folder of this instance's snapshots). */
const snapshotFile = (node: string, id: string): string =>
  join(
    (engines[node] as Engine).dir,
    'node-data',
    'workspaces',
    '.snapshots',
    running?.store.instanceId ?? '',
    `${id}.img`,
  );

/** The node whose engine holds the agent's container. */
const nodeOf = async (agentId: string): Promise<string | undefined> => {
  for (const [name, e] of Object.entries(engines)) {
    const list = await e.docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_AGENT}=${agentId}`, `${LABEL_INSTANCE}=${running?.store.instanceId}`] },
    });
    if (list.length > 0) return name;
  }
  return undefined;
};

const api = (method: string, path: string, body?: unknown) =>
  json(running as Running, key, method, path, body) as Promise<{ status: number; json: Loose }>;

const call = async (id: string, name: string, args: Record<string, unknown>): Promise<Loose> => {
  const r = await api('POST', `/v1/agents/${id}/calls`, { calls: [{ id: 'c1', name, arguments: args }] });
  expect(r.json.results?.[0]?.ok, JSON.stringify(r.json)).toBe(true);
  return r.json.results[0];
};

/** Unmounts what a node agent left mounted under a folder about to be removed (loop workspaces). */
function unmountUnder(folder: string): void {
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((at) => at.startsWith(folder));
  for (const at of mounts.reverse()) {
    try {
      execFileSync('umount', ['--lazy', at]);
    } catch {
      // Gone meanwhile.
    }
  }
}

/**
 * Another control-plane instance on `node` (its own certificate, as a second deployment sharing the
 * node has) that knows the snapshot id: it cannot make a workspace from it (NOT_FOUND, nothing
 * made) or drop it, and its own snapshot under the same id is its own file; the owner's is as it was.
 */
async function intrude(node: string, id: string): Promise<void> {
  makeControlCert(ca, ca, 'intruder', ['intruder1']);
  const intruder = await connectRemoteNode({
    name: node,
    url: (nodeAgents[node] as NodeAgent).url,
    instance: 'intruder1',
    ...tlsOf(ca, 'intruder'),
  });
  const owners = statSync(snapshotFile(node, id));
  const spec = { tenantId: 'intruders', limits: intruder.defaults };
  try {
    await expect(intruder.ensure({ ...spec, agentId: 'thief', fromSnapshot: id })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await intruder.find('thief')).toBeUndefined();
    await intruder.dropSnapshot?.(id);
    await intruder.ensure({ ...spec, agentId: 'thief' });
    await intruder.snapshot?.('thief', id);
    const theirs = join(dirname(dirname(snapshotFile(node, id))), 'intruder1', `${id}.img`);
    expect(existsSync(theirs)).toBe(true);
    await intruder.dropSnapshot?.(id);
    expect(existsSync(theirs)).toBe(false);
    await intruder.destroy('thief');
  } finally {
    await intruder.close();
  }
  const after = statSync(snapshotFile(node, id));
  expect([after.ino, after.mtimeMs, after.size]).toEqual([owners.ino, owners.mtimeMs, owners.size]);
}

/** The control plane's log lines, and those awaited (said). */
const lines: string[] = [];
const awaited: Array<{ line: RegExp; resolve: (line: string) => void }> = [];
const startLog = (line: string): void => {
  lines.push(line);
  for (const w of awaited) if (w.line.test(line)) w.resolve(line);
};
/** Settles at the first log line (said already, or to come) that `line` matches. */
const said = (line: RegExp): Promise<string> =>
  new Promise((resolve) => {
    const already = lines.find((l) => line.test(l));
    if (already !== undefined) resolve(already);
    else awaited.push({ line, resolve });
  });

/** A file as a process left it an hour ago (past the sweeps' grace). */
function plantOld(file: string): void {
  plantYoung(file);
  const hourAgo = (Date.now() - 3_600_000) / 1000;
  utimesSync(file, hourAgo, hourAgo);
}

function plantYoung(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, 'image');
}

describe.skipIf(!loopWorkspaces)('snapshots on several nodes', () => {
  beforeAll(async () => {
    makeCa(ca);
    makeCert(ca, ca, 'a', ['127.0.0.1']);
    makeCert(ca, ca, 'b', ['127.0.0.1']);
    const [a, b] = await Promise.all([startEngine(sandboxImage()), startEngine(sandboxImage())]);
    Object.assign(engines, { a, b });
    // What an older node agent left on a's disk: a flat snapshot file, whose instance is unknown.
    mkdirSync(join(a.dir, 'node-data', 'workspaces', '.snapshots'), { recursive: true });
    writeFileSync(join(a.dir, 'node-data', 'workspaces', '.snapshots', 'snap_legacy.img'), 'old');
    // And a temporary file of one of its copies that a crash ended: nobody's, removed at start.
    plantOld(join(a.dir, 'node-data', 'workspaces', '.snapshots', 'snap_crashed.tmp'));
    const [na, nb] = await Promise.all([
      startNodeAgent(ca, 'a', a, { loop: true }),
      startNodeAgent(ca, 'b', b, { loop: true }),
    ]);
    Object.assign(nodeAgents, { a: na, b: nb });
    expect(na.output()).toMatch(/node: 1 snapshot file\(s\) kept before each instance had its own folder/);
    expect(na.output()).toMatch(/node: removed 1 temporary snapshot file\(s\)/);
    expect(existsSync(join(a.dir, 'node-data', 'workspaces', '.snapshots', 'snap_crashed.tmp'))).toBe(false);
    expect(nb.output()).not.toMatch(/snapshot file/);
    const config = controlPlaneConfig(
      ca,
      join(dir, 'control'),
      [
        { name: 'a', url: na.url },
        { name: 'b', url: nb.url },
      ],
      { adminKey: ADMIN },
    );
    const instance = await certifyControlPlane(ca, config);
    // On b, in this instance's folder: a file whose record a crash dropped before the file, one being
    // made (young), and another instance's: the start's sweep removes the first alone.
    const folder = (i: string) => join(b.dir, 'node-data', 'workspaces', '.snapshots', i);
    for (const [file, young] of [
      [join(folder(instance), 'snap_dropped.img'), false],
      [join(folder(instance), 'snap_making.img'), true],
      [join(folder('other1'), 'snap_theirs.img'), false],
    ] as const)
      young ? plantYoung(file) : plantOld(file);
    running = await startServer(config, { log: startLog });
    key = (await running.store.tenants.createTenant('snaps')).apiKey;
  }, 300_000);

  afterAll(async () => {
    if (running !== undefined) {
      for (const agent of (await api('GET', '/v1/agents')).json.agents ?? [])
        await api('DELETE', `/v1/agents/${agent.id}`);
      for (const snap of (await api('GET', '/v1/snapshots')).json.snapshots ?? [])
        await api('DELETE', `/v1/snapshots/${snap.id}`);
      await running.close();
    }
    for (const agent of Object.values(nodeAgents)) await agent.stop();
    for (const e of Object.values(engines)) unmountUnder(e.dir);
    await Promise.all(Object.values(engines).map((e) => e.stop()));
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('removes at start the files of its own folder on a node that no record names, and no other', async () => {
    expect(await said(/snapshot file\(s\) on the nodes|snapshot files on the nodes/)).toBe(
      'removed 1 snapshot file(s) on the nodes that no snapshot or checkpoint names',
    );
    const folder = (i: string) => join((engines.b as Engine).dir, 'node-data', 'workspaces', '.snapshots', i);
    const instance = running?.store.instanceId ?? '';
    expect(existsSync(join(folder(instance), 'snap_dropped.img'))).toBe(false);
    expect(existsSync(join(folder(instance), 'snap_making.img'))).toBe(true);
    expect(existsSync(join(folder('other1'), 'snap_theirs.img'))).toBe(true);
  });

  it('takes a snapshot on its agent’s node, makes an agent from it there, refuses while that node is cordoned, and deletes it there', async () => {
    const src = (await api('POST', '/v1/agents', {})).json.id as string;
    await call(src, 'write', { file_path: 'kept.txt', content: 'from the snapshot\n' });
    const home = (await nodeOf(src)) as string;
    expect(['a', 'b']).toContain(home);
    const other = home === 'a' ? 'b' : 'a';
    const snap = await api('POST', `/v1/agents/${src}/snapshots`);
    expect(snap.status, JSON.stringify(snap.json)).toBe(201);
    expect(snap.json.node).toBe(home);
    expect(existsSync(snapshotFile(home, snap.json.id))).toBe(true);
    expect(existsSync(snapshotFile(other, snap.json.id))).toBe(false);
    await intrude(home, snap.json.id);
    // The other node is emptier; the copy still goes where the snapshot is.
    const copy = await api('POST', '/v1/agents', { fromSnapshot: snap.json.id });
    expect(copy.status, JSON.stringify(copy.json)).toBe(201);
    expect(await nodeOf(copy.json.id)).toBe(home);
    const read = await call(copy.json.id, 'bash', { command: 'cat kept.txt', description: 'read' });
    expect(read.value.stdout).toBe('from the snapshot\n');
    // Cordoned: refused, naming the node, nothing made.
    const agentsBefore = (await api('GET', '/v1/agents')).json.agents.length;
    expect((await json(running as Running, ADMIN, 'POST', `/v1/nodes/${home}/cordon`)).status).toBe(200);
    const refused = await api('POST', '/v1/agents', { fromSnapshot: snap.json.id });
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({
      code: 'NODE_CORDONED',
      message: new RegExp(`node ${home}\\b`),
    });
    expect((await api('GET', '/v1/agents')).json.agents.length).toBe(agentsBefore);
    expect((await json(running as Running, ADMIN, 'POST', `/v1/nodes/${home}/uncordon`)).status).toBe(200);
    expect((await api('DELETE', `/v1/snapshots/${snap.json.id}`)).status).toBe(204);
    expect(existsSync(snapshotFile(home, snap.json.id))).toBe(false);
  }, 300_000);

  it('sweeps a node again when it answers again, as the start swept the others', async () => {
    const instance = running?.store.instanceId ?? '';
    const orphan = join(
      (engines.b as Engine).dir,
      'node-data',
      'workspaces',
      '.snapshots',
      instance,
      'snap_late.img',
    );
    await (nodeAgents.b as NodeAgent).kill();
    await said(/node b: unreachable/);
    plantOld(orphan); // what a crash left while the node was away
    await (nodeAgents.b as NodeAgent).restart();
    expect(await said(/snapshot file\(s\) on node b|snapshot files on node b/)).toBe(
      'removed 1 snapshot file(s) on node b that no snapshot or checkpoint names',
    );
    expect(existsSync(orphan)).toBe(false);
  }, 300_000);
});
