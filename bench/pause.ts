// Pause and resume benchmark: `node --no-node-snapshot bench/pause.ts [reps]` (image:
// DSH_SANDBOX_IMAGE, else the one setup builds). Through the docker provider as the service runs
// it (loop workspaces where the machine can mount them, sessions over link sockets), against a
// baseline measured in the same run: a cold create to its first command (`exec true`). Measured:
// pause `stop` (the container stopped), its resume to the first command (the container started,
// sandboxd connected, `exec true`), pause `freeze` (the engine's freezer), its resume to the first
// command (thawed, reconnected), and the memory a running, a frozen and a stopped sandbox holds
// (the container's memory use as the engine reports it, page cache left out). Prints medians and
// ratios. Everything it makes is labelled dsh.bench=<run> and removed by that label at the end.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  loopUnavailable,
} from '../host/sandbox/docker/index.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';

const REPS = Number(process.argv[2] ?? 10);
const docker = new Docker();
const run = benchRunId();
const workspacesDir = join(tmpdir(), `dsh-bench-pause-${run}`);
const loop = (await loopUnavailable()) === undefined;
const workspaces = loop ? createLoopWorkspaces(workspacesDir) : createVolumeWorkspaces(docker);
const image = await benchImage();

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const MiB = 1024 * 1024;

const provider = createDockerProvider({
  docker,
  image,
  labels: { 'dsh.bench': run },
  prefix: 'dshb',
  instance: run,
  idleMs: 0,
  workspaces,
  workspaceSpares: 2,
  links: `${workspacesDir}-links`,
});

/** The container's memory use (MiB, page cache left out), or 0 when it is not running. */
async function memoryMiB(agentId: string): Promise<number> {
  const used = await provider.usage?.(agentId, { stats: true, statsTimeoutMs: 5_000 });
  return used?.memory === undefined ? 0 : used.memory.usedBytes / MiB;
}

const rows: Record<string, number[]> = {
  create: [],
  pauseStop: [],
  resumeStop: [],
  pauseFreeze: [],
  resumeFreeze: [],
  memRunning: [],
  memFrozen: [],
  memStopped: [],
};

try {
  for (let i = -1; i < REPS; i++) {
    const agentId = `agt_bench_${run}_${i + 1}`;
    const create = await timed(async () => {
      const sandbox = await provider.create({ tenantId: 'bench', agentId });
      await sandbox.exec('true');
    });
    const sandbox = await provider.get(agentId);
    if (sandbox === undefined) throw new Error('the sandbox just made is gone');
    // A running process that holds some memory, as an agent's dev server would.
    await sandbox.jobs.start(
      'node -e "const b = Buffer.alloc(64 << 20, 1); setInterval(() => b[0]++, 1000)"',
    );
    await new Promise((r) => setTimeout(r, 500));
    const memRunning = await memoryMiB(agentId);

    const pauseFreeze = await timed(() => provider.pause?.(agentId, 'freeze') as Promise<unknown>);
    const memFrozen = await memoryMiB(agentId);
    const resumeFreeze = await timed(() => sandbox.exec('true'));

    const pauseStop = await timed(() => provider.pause?.(agentId, 'stop') as Promise<unknown>);
    const memStopped = await memoryMiB(agentId);
    const resumeStop = await timed(() => sandbox.exec('true'));
    await provider.destroy(agentId);
    if (i < 0) continue; // the first round warms the engine and the image
    const values = {
      create,
      pauseStop,
      resumeStop,
      pauseFreeze,
      resumeFreeze,
      memRunning,
      memFrozen,
      memStopped,
    };
    for (const [k, v] of Object.entries(values)) rows[k]?.push(v);
  }
  const m = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<
    string,
    number
  >;
  const ms = (x: number | undefined) => `${(x ?? 0).toFixed(0).padStart(6)} ms`;
  const vs = (x: number | undefined) => `${((x ?? 0) / (m.create ?? 1)).toFixed(2)}x create`;
  console.log(`pause bench: ${REPS} rounds, medians; workspaces: ${loop ? 'loop images' : 'Docker volumes'}`);
  console.log(`  baseline: cold create to first command   ${ms(m.create)}`);
  console.log(`  pause stop                               ${ms(m.pauseStop)}  ${vs(m.pauseStop)}`);
  console.log(`  resume (stop) to first command           ${ms(m.resumeStop)}  ${vs(m.resumeStop)}`);
  console.log(`  pause freeze                             ${ms(m.pauseFreeze)}  ${vs(m.pauseFreeze)}`);
  console.log(`  resume (freeze) to first command         ${ms(m.resumeFreeze)}  ${vs(m.resumeFreeze)}`);
  const mib = (x: number | undefined) => `${(x ?? 0).toFixed(1).padStart(6)} MiB`;
  console.log(`  memory held, running (64 MiB job)        ${mib(m.memRunning)}`);
  console.log(`  memory held, frozen                      ${mib(m.memFrozen)}`);
  console.log(`  memory held, stopped                     ${mib(m.memStopped)}`);
} finally {
  await provider.close();
  await removeBenchResources(docker, run);
  await workspaces.sweep([], true).catch(() => undefined);
  await rm(workspacesDir, { recursive: true, force: true }).catch(() => undefined);
  await rm(`${workspacesDir}-links`, { recursive: true, force: true }).catch(() => undefined);
}
