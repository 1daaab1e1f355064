// A remote node's snapshot files that no record keeps are swept (nodes/remote/snapshot-sweep.ts,
// agents/service/snapshot-sweep.ts sweepNodeSnapshots): through the real node server over TLS on
// loopback, in front of a node whose snapshots are a loop store's folder for the calling instance
// (as serve-node.ts gives them: instanceWorkspaces over a temporary folder, no loop device needed),
// the control plane's start removes the old files of its own instance's folder that neither a
// snapshot row nor a checkpoint index names; a file a record names, one written lately (a copy in
// progress) and every file of another instance's folder or of the flat folder stay. A node that
// keeps no snapshots, or does not answer, removes nothing and fails no start; a control plane's
// list removes only files its node judged old; with a store replicas may share, a checkpoint's
// file is kept (another replica's index may hold it). An older node agent's flat temporary files are
// removed at the node agent's start past the same grace (serve-node.ts tidyFlatSnapshots).
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sweepNodeSnapshots } from '../../../host/agents/service/snapshot-sweep.ts';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/workspaces/loop.ts';
import type { WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';
import { createPlacement } from '../../../host/sandbox/nodes/placement.ts';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import type { SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { instanceWorkspaces, tidyFlatSnapshots } from '../../../host/serve-node.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { fakeNode } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-sweep-'));
const ca = join(dir, 'ca');
const HOUR_AGO = (Date.now() - 3_600_000) / 1000;

let root: string;
let store: WorkspaceStore;
let server: NodeServer;
let node: RemoteNode;
/** Ids each sweep asked the store about. */
const asked: string[][] = [];

/** A snapshot file of `instance`'s folder (the flat one without), old unless `young`. */
const plant = (file: string, instance?: string, young = false): string => {
  const folder = join(root, '.snapshots', ...(instance === undefined ? [] : [instance]));
  mkdirSync(folder, { recursive: true });
  const path = join(folder, file);
  writeFileSync(path, 'x');
  if (!young) utimesSync(path, HOUR_AGO, HOUR_AGO);
  return path;
};

/** A checkpoint index's entry holding the snapshot `id` (agents/checkpoints/store.ts). */
const heldEntry = (id: string) => ({
  callId: 'c1',
  tool: 'bash',
  seq: 1,
  at: 1,
  files: [],
  bytes: 0,
  snapshot: { id, node: 'one', sizeBytes: 1 },
});

/** A store whose snapshot rows are `rows` (one replicas may share when `replicas`), and the test's checkpoint folder. */
const records = (rows: string[], replicas = false) => ({
  replicas,
  snapshots: {
    recorded: async (ids: string[]) => {
      asked.push(ids);
      return new Set(ids.filter((id) => rows.includes(id)));
    },
  },
  checkpointDir: join(root, 'checkpoints'),
});

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'one', ['127.0.0.1']);
  makeControlCert(ca, ca, 'alpha', ['alpha']);
  server = await serveNode({
    ...servingAs(ca),
    // The node agent's way: every instance's node has that instance's snapshot folder.
    // (Each test's store: a folder of its own.)
    nodeFor: (instance) => ({
      ...fakeNode('one'),
      sweepSnapshots: async (recorded) =>
        (await instanceWorkspaces(store, instance).sweepSnapshots?.(recorded)) ?? [],
    }),
  });
  node = await connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${server.port}`,
    instance: 'alpha',
    ...tlsOf(ca, 'alpha'),
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  await node?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  root = mkdtempSync(join(dir, 'root-'));
  store = createLoopWorkspaces(root, { freeBytes: async () => 1024 ** 4 });
  asked.length = 0;
});

describe("a remote node's snapshot files", () => {
  it("are swept in the instance's own folder: what no record keeps, old, goes; the rest stays", async () => {
    const dropped = plant('snap_dropped.img', 'alpha'); // its row deleted, the file left by a crash
    const kept = plant('snap_kept.img', 'alpha'); // a snapshot row names it
    const held = plant('ckpt_held.img', 'alpha'); // a checkpoint index holds it
    const young = plant('snap_young.img', 'alpha', true); // being made: its row not written yet
    const temp = plant('snap_copying.tmp', 'alpha'); // a copy's: the adoption's sweepTemps judges it
    const other = plant('snap_other.img', 'beta'); // another instance's: never judged
    const flat = plant('snap_flat.img'); // an older version's, unassigned: never judged
    mkdirSync(join(root, 'checkpoints', 'agent-a'), { recursive: true });
    writeFileSync(
      join(root, 'checkpoints', 'agent-a', 'index.json'),
      JSON.stringify({ seq: 1, entries: [heldEntry('ckpt_held')], dropped: [] }),
    );
    const removed = await sweepNodeSnapshots({ node, ...records(['snap_kept']) });
    expect(removed).toEqual(['snap_dropped']);
    expect(existsSync(dropped)).toBe(false);
    for (const file of [kept, held, young, temp, other, flat]) expect(existsSync(file), file).toBe(true);
    // The store was asked about the instance's old files alone.
    expect(asked.map((ids) => ids.toSorted())).toEqual([['ckpt_held', 'snap_dropped', 'snap_kept']]);
  });

  it("keep every checkpoint's file when replicas may share the store (another's index may hold it)", async () => {
    // Replicas share the instance, so its folder on the node, but each has its own checkpoint
    // indexes (its data dir): this one's sweep cannot see what the others' hold.
    const theirs = plant('ckpt_of_another_replica.img', 'alpha');
    const orphan = plant('snap_orphan.img', 'alpha');
    const fork = plant('fork_orphan.img', 'alpha');
    expect((await sweepNodeSnapshots({ node, ...records([], true) })).toSorted()).toEqual([
      'fork_orphan',
      'snap_orphan',
    ]);
    expect(existsSync(theirs)).toBe(true);
    expect(existsSync(orphan) || existsSync(fork)).toBe(false);
    // Without replicas the same file is this process's to judge: no index holds it, it goes.
    expect(await sweepNodeSnapshots({ node, ...records([]) })).toEqual(['ckpt_of_another_replica']);
  });

  it('are judged by the node: a list of ids it did not name as old removes nothing', async () => {
    const young = plant('snap_young.img', 'alpha', true);
    const other = plant('snap_other.img', 'beta');
    // What a mistaken or hostile control plane could send: a young file, another instance's, a path.
    const answer = await fetchAs('sweepSnapshots', { drop: ['snap_young', 'snap_other'] });
    expect(answer).toEqual({ status: 200, body: { removed: [] } });
    expect((await fetchAs('sweepSnapshots', { drop: ['../beta/snap_other'] })).status).toBe(400);
    expect(existsSync(young) && existsSync(other)).toBe(true);
  });

  it("remove nothing when the store's word cannot be had", async () => {
    const dropped = plant('snap_dropped.img', 'alpha');
    const failing = {
      snapshots: {
        recorded: async () => {
          throw new Error('the store is down');
        },
      },
      checkpointDir: join(root, 'checkpoints'),
      replicas: false,
    };
    await expect(sweepNodeSnapshots({ node, ...failing })).rejects.toThrow('the store is down');
    expect(existsSync(dropped)).toBe(true);
  });

  it('are passed over on a node that keeps none or does not answer, with the reason said once per node', async () => {
    const errors: string[] = [];
    const bare = fakeNode('bare'); // Docker volumes: no snapshots
    const down: SandboxNode<unknown> = {
      ...fakeNode('down'),
      sweepSnapshots: async () => {
        throw new Error('connect ECONNREFUSED');
      },
    };
    const dropped = plant('snap_dropped.img', 'alpha');
    const placed = createPlacement([bare, down, node], { onError: (e) => errors.push(String(e)) });
    expect(await sweepNodeSnapshots({ node: placed, ...records([]) })).toEqual(['snap_dropped']);
    expect(existsSync(dropped)).toBe(false);
    expect(errors).toEqual(['Error: node down: its snapshot files not swept (Error: connect ECONNREFUSED)']);
  });
});

describe("an older node agent's flat temporary files", () => {
  it("are removed at the node agent's start once past the grace; a young one, an instance's and the snapshots stay", async () => {
    const old = plant('snap_crashed.tmp');
    const young = plant('snap_copying.tmp', undefined, true);
    const instance = plant('snap_mine.tmp', 'alpha');
    const image = plant('snap_unassigned.img');
    const lines: string[] = [];
    await tidyFlatSnapshots(root, (line) => lines.push(line));
    expect(existsSync(old)).toBe(false);
    for (const file of [young, instance, image]) expect(existsSync(file), file).toBe(true);
    expect(lines[0]).toBe(
      "node: removed 1 temporary snapshot file(s) an older version's crashed copies left",
    );
    expect(lines[1]).toContain('1 snapshot file(s) kept before each instance had its own folder');
  });
});

/** One call as control plane `alpha`, with a body of our own: its status and answer. */
async function fetchAs(method: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const { request } = await import('node:https');
  const tls = tlsOf(ca, 'alpha');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: `/v1/${method}`,
        method: 'POST',
        ...tls,
        headers: { 'x-dsh-instance': 'alpha', 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
