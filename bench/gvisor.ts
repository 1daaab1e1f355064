// gVisor's cost against runc: `node --no-node-snapshot bench/gvisor.ts [reps]` (root, dockerd and
// runsc on PATH; image: DSH_SANDBOX_IMAGE, else the one setup builds). Both runtimes run on one
// private engine this bench starts with runsc registered (tests/helpers/gvisor-engine.ts: its own
// data root and socket, stopped by pid at the end; the machine's main engine is left alone), with
// the service's own sandboxes (loop workspaces where they work, the link socket), in one run:
// agent ready (a cold create: a gVisor sandbox never comes from the warm pool, which is runc),
// bash `true` (exec through sandboxd), read 1 KiB, and a 64 MiB download. Prints medians and the
// gvisor/runc ratio of each. Everything it makes is labelled dsh.bench=<run> and removed.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  loopUnavailable,
} from '../host/sandbox/docker/index.ts';
import type { SandboxRuntime } from '../host/sandbox/runtimes.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { gvisorEngineUnavailable, startGvisorEngine } from '../tests/helpers/gvisor-engine.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';

const REPS = Number(process.argv[2] ?? 20);
const READIES = Math.max(3, Math.round(REPS / 4));
const DOWNLOADS = Math.max(3, Math.round(REPS / 5));
const MiB = 1024 * 1024;

const missing = gvisorEngineUnavailable();
if (missing !== undefined) {
  process.stdout.write(`bench/gvisor.ts: cannot run here: ${missing}\n`);
  process.exit(1);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const time = async (n: number, fn: (i: number) => Promise<unknown>, warm = 2): Promise<number> => {
  for (let i = 0; i < warm; i++) await fn(-1 - i);
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    xs.push(performance.now() - t);
  }
  return median(xs);
};

const run = benchRunId();
const engine = await startGvisorEngine(await benchImage());
const dir = join(tmpdir(), `dsh-bench-gv-${run}`);
const loop = (await loopUnavailable({ dockerHost: engine.host })) === undefined;
const workspaces = loop ? createLoopWorkspaces(join(dir, 'ws')) : createVolumeWorkspaces(engine.docker);
const provider = createDockerProvider({
  docker: engine.docker,
  image: await benchImage(),
  instance: run,
  prefix: 'dshb',
  labels: { 'dsh.bench': run },
  idleMs: 0,
  workspaces,
  links: join(dir, 'links'),
});

type Row = { what: string; runc: number; gvisor: number; unit: string };
const rows: Row[] = [];

async function measure(runtime: SandboxRuntime): Promise<Record<string, number>> {
  let n = 0;
  const ready = await time(
    READIES,
    async () => {
      const agentId = `${runtime}-ready-${n++}`;
      await provider.create({ tenantId: 't', agentId, runtime });
      await provider.destroy(agentId);
    },
    1,
  );
  const sb: Sandbox = await provider.create({ tenantId: 't', agentId: `${runtime}-main`, runtime });
  const bashTrue = await time(REPS, () => sb.exec('true'));
  await sb.fs.writeFile('k1.bin', Buffer.alloc(1024, 7));
  const read1k = await time(REPS, () => sb.fs.readFile('k1.bin'));
  await sb.exec('head -c 67108864 /dev/urandom > dl.bin');
  const download = await time(
    DOWNLOADS,
    async () => {
      const file = await sb.archive.downloadFile('dl.bin');
      let bytes = 0;
      for await (const chunk of file.content) bytes += chunk.length;
      if (bytes !== 64 * MiB) throw new Error(`downloaded ${bytes} bytes`);
    },
    1,
  );
  return { ready, bashTrue, read1k, download };
}

try {
  const runc = await measure('runc');
  const gvisor = await measure('gvisor');
  rows.push(
    {
      what: 'agent ready (cold create)',
      runc: runc.ready as number,
      gvisor: gvisor.ready as number,
      unit: 'ms',
    },
    { what: 'bash true', runc: runc.bashTrue as number, gvisor: gvisor.bashTrue as number, unit: 'ms' },
    { what: 'read 1 KiB', runc: runc.read1k as number, gvisor: gvisor.read1k as number, unit: 'ms' },
    { what: '64 MiB download', runc: runc.download as number, gvisor: gvisor.download as number, unit: 'ms' },
  );
  process.stdout.write(
    `gVisor (runsc ptrace) vs runc on one engine; ${REPS} reps (ready ${READIES}, download ${DOWNLOADS}), medians; workspaces: ${loop ? 'loop' : 'volumes'}\n`,
  );
  for (const r of rows)
    process.stdout.write(
      `${r.what.padEnd(28)} runc ${r.runc.toFixed(2).padStart(9)} ${r.unit}   gvisor ${r.gvisor.toFixed(2).padStart(9)} ${r.unit}   x${(r.gvisor / r.runc).toFixed(2)}\n`,
    );
  const mbps = (ms: number) => ((64 / ms) * 1000).toFixed(0);
  process.stdout.write(
    `64 MiB download throughput: runc ${mbps(runc.download as number)} MiB/s, gvisor ${mbps(gvisor.download as number)} MiB/s\n`,
  );
} finally {
  await provider.close();
  for (const runtime of ['runc', 'gvisor']) await provider.destroy(`${runtime}-main`).catch(() => {});
  await removeBenchResources(engine.docker, run);
  await workspaces.sweep([], true);
  await engine.stop();
  await rm(dir, { recursive: true, force: true });
}
