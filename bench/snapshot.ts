// Snapshot and fork benchmark: `node --no-node-snapshot bench/snapshot.ts [reps]` (image:
// DSH_SANDBOX_IMAGE, else the one setup builds). Through the docker provider as the service runs
// it, on loop workspaces (snapshots need them): a 1 GiB workspace holding 200 MiB of random bytes.
// Measured: a snapshot (the file system frozen, the image copied sparse), a fork from it (a new
// sandbox whose workspace is a copy of the snapshot, to its first command), and the host disk the
// snapshot takes; against baselines measured in the same run on the same workspace: `cp` of the
// image with holes filled (`cp --sparse=never`, what a naive copy of the file costs), `cp -a` of the
// 200 MiB of files from the mounted workspace, a cold create to its first command, and a cold create
// seeded by the tar copy an isolated child gets today (archive download into upload). Prints
// medians and ratios. Everything it makes is labelled dsh.bench=<run> and removed at the end.
import { execFile } from 'node:child_process';
import { readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { createDockerProvider, createLoopWorkspaces, loopUnavailable } from '../host/sandbox/docker/index.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';
import { median, timed } from './lib/timing.ts';

const REPS = Number(process.argv[2] ?? 3);
const MiB = 1024 * 1024;
const DISK = 1024 * MiB;
const why = await loopUnavailable();
if (why !== undefined) {
  console.log(`snapshot bench: skipped, loop workspaces are unavailable here (${why})`);
  process.exit(0);
}
const sh = promisify(execFile);
const docker = new Docker();
const run = benchRunId();
const workspacesDir = join(tmpdir(), `dsh-bench-snap-${run}`);
const scratch = join(tmpdir(), `dsh-bench-snap-${run}-copies`);
const workspaces = createLoopWorkspaces(workspacesDir);
const image = await benchImage();

const provider = createDockerProvider({
  docker,
  image,
  labels: { 'dsh.bench': run },
  prefix: 'dshb',
  instance: run,
  idleMs: 0,
  workspaces,
  maxima: { diskBytes: 2 * DISK },
  links: `${workspacesDir}-links`,
});

/** The agent's workspace image and mount point (the loop store's `<root>/<name>-ws(.img)`). */
async function workspaceOf(agentId: string): Promise<{ img: string; dir: string }> {
  const file = (await readdir(workspacesDir)).find((f) => f.endsWith('.img') && f.includes(agentId));
  if (file === undefined) throw new Error(`no workspace image for ${agentId}`);
  return { img: join(workspacesDir, file), dir: join(workspacesDir, file.slice(0, -4)) };
}

const rows: Record<string, number[]> = {
  snapshot: [],
  fork: [],
  snapshotMiB: [],
  cpImage: [],
  cpFiles: [],
  create: [],
  tarSeed: [],
};

try {
  await sh('mkdir', ['-p', scratch]);
  for (let i = -1; i < REPS; i++) {
    const a = `agt_snapb_${run}_${i + 1}`;
    const source = await provider.create({ tenantId: 'bench', agentId: a, limits: { diskBytes: DISK } });
    const wrote = await source.exec('head -c 200M /dev/urandom > data.bin && sync', { timeoutMs: 300_000 });
    if (wrote.exitCode !== 0) throw new Error(`writing 200 MiB failed: ${wrote.stderr}`);
    const { img, dir } = await workspaceOf(a);

    const snapId = `snapb_${run}_${i + 1}`;
    const snapshot = await timed(() => provider.snapshot?.(a, snapId) as Promise<unknown>);
    const snapshotMiB = ((await stat(join(workspacesDir, '.snapshots', `${snapId}.img`))).blocks * 512) / MiB;
    const b = `${a}_fork`;
    const fork = await timed(async () => {
      const s = await provider.create({
        tenantId: 'bench',
        agentId: b,
        limits: { diskBytes: DISK },
        fromSnapshot: snapId,
      });
      await s.exec('true');
    });

    const cpImage = await timed(() => sh('cp', ['--sparse=never', img, join(scratch, 'image')]));
    const cpFiles = await timed(() => sh('cp', ['-a', `${dir}/.`, join(scratch, 'files')]));
    await rm(scratch, { recursive: true, force: true });
    await sh('mkdir', ['-p', scratch]);

    const c = `${a}_cold`;
    const create = await timed(async () => {
      const s = await provider.create({ tenantId: 'bench', agentId: c, limits: { diskBytes: DISK } });
      await s.exec('true');
    });
    const d = `${a}_tar`;
    const tarSeed = await timed(async () => {
      const s = await provider.create({ tenantId: 'bench', agentId: d, limits: { diskBytes: DISK } });
      await s.archive.upload('.', await source.archive.download('.'));
      await s.exec('true');
    });
    for (const id of [a, b, c, d]) await provider.destroy(id);
    await provider.dropSnapshot?.(snapId, provider.node.name);
    if (i < 0) continue; // the first round warms the engine, the image and the page cache
    const values = { snapshot, fork, snapshotMiB, cpImage, cpFiles, create, tarSeed };
    for (const [k, v] of Object.entries(values)) rows[k]?.push(v);
  }
  const m = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<
    string,
    number
  >;
  const ms = (x: number | undefined) => `${(x ?? 0).toFixed(0).padStart(6)} ms`;
  const vs = (x: number | undefined, base: number | undefined, name: string) =>
    `${((x ?? 0) / (base ?? 1)).toFixed(2)}x ${name}`;
  console.log(`snapshot bench: ${REPS} rounds, medians; a ${DISK / MiB} MiB loop workspace holding 200 MiB`);
  console.log(`  baseline: cp --sparse=never of the image  ${ms(m.cpImage)}`);
  console.log(`  baseline: cp -a of the workspace's files  ${ms(m.cpFiles)}`);
  console.log(`  baseline: cold create to first command    ${ms(m.create)}`);
  console.log(`  baseline: cold create + tar copy (today's isolated child) ${ms(m.tarSeed)}`);
  console.log(
    `  snapshot (frozen, sparse copy)            ${ms(m.snapshot)}  ${vs(m.snapshot, m.cpImage, 'cp image')}, ${vs(m.snapshot, m.cpFiles, 'cp -a')}`,
  );
  console.log(
    `  fork to first command                     ${ms(m.fork)}  ${vs(m.fork, m.create, 'cold create')}, ${vs(m.fork, m.tarSeed, 'create + tar copy')}`,
  );
  console.log(
    `  host disk the snapshot takes              ${(m.snapshotMiB ?? 0).toFixed(0).padStart(6)} MiB of ${DISK / MiB}`,
  );
} finally {
  await provider.close();
  await removeBenchResources(docker, run);
  await workspaces.sweep([], true).catch(() => undefined);
  for (const dir of [workspacesDir, `${workspacesDir}-links`, scratch])
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}
