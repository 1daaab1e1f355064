// Snapshot checkpoints of bash calls: `node --no-node-snapshot bench/bash-snapshot.ts [rounds]`
// (image: DSH_SANDBOX_IMAGE, else the one setup builds; loop workspaces needed, else it says so and
// stops). One agent's sandbox through the docker provider, its calls through the tool pipeline with
// the checkpoint wrapper, a small workspace (200 files of 4 KiB). Per round: the baseline, 20 bash
// calls untracked (`checkpoints.snapshotBash` off); 20 bash calls each snapshotted first (the cost the
// setting adds: the file system frozen, its image copied sparse, the index written); then a rollback
// to before the first of them (the sandbox removed and made again from a copy of the snapshot).
// Prints medians and ratios against the baseline, all measured in the same run. Everything it
// makes is labelled dsh.bench=<run> and removed by it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { agentCheckpoints } from '../host/agents/checkpoints/agent.ts';
import { createCheckpointStore } from '../host/agents/checkpoints/store.ts';
import { createCheckpointTracker } from '../host/agents/checkpoints/tracker.ts';
import { installCheckpoints } from '../host/agents/checkpoints/wrapper.ts';
import { createDockerProvider, createLoopWorkspaces, loopUnavailable } from '../host/sandbox/docker/index.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { bashTool } from '../host/tools/builtin/index.ts';
import { type AgentScope, createRegistry } from '../host/tools/index.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';
import { median, timed } from './lib/timing.ts';

const ROUNDS = Number(process.argv[2] ?? 3);
const CALLS = 20;
const why = await loopUnavailable();
if (why !== undefined) {
  console.log(`bash-snapshot bench: no loop workspaces here (${why}); snapshots need them.`);
  process.exit(0);
}
const docker = new Docker();
const run = benchRunId();
const workspacesDir = join(tmpdir(), `dsh-bench-bashsnap-${run}`);
const workspaces = createLoopWorkspaces(workspacesDir);
const image = await benchImage();
const dataDir = await mkdtemp(join(tmpdir(), `dsh-bench-bashsnap-${run}-`));

const provider = createDockerProvider({
  docker,
  image,
  labels: { 'dsh.bench': run },
  prefix: 'dshb',
  instance: run,
  idleMs: 0,
  workspaces,
  workspaceSpares: 1,
  links: `${workspacesDir}-links`,
});
const agentId = `agt_bench_${run}`;
const rows: Record<string, number[]> = { untracked: [], snapshotted: [], rollback: [], bytes: [] };

try {
  let sandbox: Sandbox = await provider.create({ tenantId: 'bench', agentId });
  const spec = { tenantId: 'bench', agentId };
  const snapshot = provider.snapshot as NonNullable<typeof provider.snapshot>;
  const tracker = createCheckpointTracker({
    store: createCheckpointStore(dataDir),
    boundsOf: async () => ({ maxBytes: 1024 ** 3, maxCount: 256, snapshotBash: true }),
    dropSnapshot: async ({ id, node }) => provider.dropSnapshot?.(id, node),
  });
  let n = 0;
  const checkpoints = agentCheckpoints(
    tracker,
    { append: async () => [] },
    { id: agentId, tenantId: 'bench', sessionId: 'bench' },
    async () => sandbox,
    {
      async take() {
        const id = `ckpt_bench_${++n}`;
        const taken = await snapshot(agentId, id);
        return { snapshot: { id, node: taken.node, sizeBytes: taken.sizeBytes }, bytes: taken.bytes };
      },
      async restore(held) {
        await provider.destroy(agentId);
        sandbox = await provider.create({
          ...spec,
          limits: { diskBytes: held.sizeBytes },
          fromSnapshot: held.id,
        });
        return sandbox;
      },
    },
  );
  const registry = createRegistry();
  registry.global.register(bashTool);
  const scope = registry.scope('preset:bench').child('agent:bench');
  installCheckpoints(scope);
  const plain = (): AgentScope => ({ id: agentId, sessionId: 'bench', services: { sandbox } });
  const tracked = (): AgentScope => ({ ...plain(), services: { sandbox, checkpoints } });
  const one = async (agent: AgentScope, command: string): Promise<string> => {
    const id = `c${++n}`;
    const [result] = await scope.execute([{ id, name: 'bash', arguments: { command, description: 'b' } }], {
      agent,
    });
    if (!result?.ok) throw new Error(`bash failed: ${JSON.stringify(result?.error)}`);
    return id;
  };
  await one(plain(), 'mkdir -p src && for i in $(seq 1 200); do head -c 4096 /dev/urandom > src/f$i; done');
  for (let round = -1; round < ROUNDS; round++) {
    const untracked = await timed(async () => {
      for (let i = 0; i < CALLS; i++) await one(plain(), `echo ${i} >> log.txt`);
    });
    const before = (await sandbox.fs.readFile('log.txt')).toString();
    const ids: string[] = [];
    const snapshotted = await timed(async () => {
      for (let i = 0; i < CALLS; i++) ids.push(await one(tracked(), `echo s${i} >> log.txt`));
    });
    const list = await checkpoints.list();
    const bytes = median(list.slice(-CALLS).map((c) => c.bytes));
    const rollback = await timed(() => checkpoints.rollback({ callId: ids[0] as string }, 'api'));
    if ((await sandbox.fs.readFile('log.txt')).toString() !== before)
      throw new Error('the rollback was not exact');
    if (round < 0) continue; // the first round warms the engine and the caches
    for (const [k, v] of Object.entries({ untracked, snapshotted, rollback, bytes })) rows[k]?.push(v);
  }
  const m = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<
    string,
    number
  >;
  const ms = (x: number | undefined) => `${(x ?? 0).toFixed(0).padStart(6)} ms`;
  const vs = (x: number | undefined) => `${((x ?? 0) / (m.untracked ?? 1)).toFixed(2)}x the baseline`;
  console.log(`bash-snapshot bench: ${ROUNDS} rounds, medians; a workspace of 200 files of 4 KiB`);
  console.log(`  baseline: ${CALLS} bash calls, untracked          ${ms(m.untracked)}`);
  console.log(`  ${CALLS} bash calls, each snapshotted first     ${ms(m.snapshotted)}  ${vs(m.snapshotted)}`);
  console.log(`  rollback across them (sandbox made again)   ${ms(m.rollback)}  ${vs(m.rollback)}`);
  const per = ((m.snapshotted ?? 0) - (m.untracked ?? 0)) / CALLS;
  console.log(`  a snapshot adds per bash call               ${per.toFixed(1).padStart(6)} ms`);
  console.log(`  host disk per snapshot                      ${((m.bytes ?? 0) / 1024 ** 2).toFixed(1)} MiB`);
} finally {
  await provider.destroy(agentId).catch(() => undefined);
  await provider.close();
  await removeBenchResources(docker, run);
  await workspaces.sweep([], true).catch(() => undefined);
  await rm(workspacesDir, { recursive: true, force: true }).catch(() => undefined);
  await rm(`${workspacesDir}-links`, { recursive: true, force: true }).catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
}
