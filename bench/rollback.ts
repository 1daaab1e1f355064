// Rollback benchmark: `node --no-node-snapshot bench/rollback.ts [rounds]` (image:
// DSH_SANDBOX_IMAGE, else the one setup builds). One agent's sandbox through the docker provider as
// the service runs it, its calls through the tool pipeline, its checkpoints under a temporary data
// directory. Per round, on a 20 KiB source file of 400 lines: the baseline, 100 writes of the whole
// file (untracked: no checkpoints); 100 edits (one line each) untracked, then 100 edits tracked (the
// cost a checkpoint adds to a call: the pre-image read and kept, what the call left hashed); then
// the rollback of those 100 tracked edits to before the first (one write per file touched, after
// checking it against what the last edit left). Prints medians and ratios against the baseline,
// all measured in the same run. Everything it makes is labelled dsh.bench=<run> and removed by it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { agentCheckpoints } from '../host/agents/checkpoints/agent.ts';
import { createCheckpointStore } from '../host/agents/checkpoints/store.ts';
import { createCheckpointTracker } from '../host/agents/checkpoints/tracker.ts';
import { installCheckpoints } from '../host/agents/checkpoints/wrapper.ts';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  loopUnavailable,
} from '../host/sandbox/docker/index.ts';
import { editTool, writeTool } from '../host/tools/builtin/index.ts';
import { type AgentScope, createRegistry } from '../host/tools/index.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';
import { median, timed } from './lib/timing.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const EDITS = 100;
const docker = new Docker();
const run = benchRunId();
const workspacesDir = join(tmpdir(), `dsh-bench-rollback-${run}`);
const loop = (await loopUnavailable()) === undefined;
const workspaces = loop ? createLoopWorkspaces(workspacesDir) : createVolumeWorkspaces(docker);
const image = await benchImage();
const dataDir = await mkdtemp(join(tmpdir(), `dsh-bench-ckpt-${run}-`));

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

const source = Array.from({ length: 400 }, (_, i) => `const line${i} = ${i}; // some source text here`).join(
  '\n',
);
const agentId = `agt_bench_${run}`;
const rows: Record<string, number[]> = { writes: [], editsUntracked: [], editsTracked: [], rollback: [] };

try {
  const sandbox = await provider.create({ tenantId: 'bench', agentId });
  const tracker = createCheckpointTracker({
    store: createCheckpointStore(dataDir),
    boundsOf: async () => ({ maxBytes: 64 * 1024 * 1024, maxCount: 256 }),
  });
  const checkpoints = agentCheckpoints(
    tracker,
    { append: async () => [] },
    { id: agentId, tenantId: 'bench', sessionId: 'bench' },
    async () => sandbox,
  );
  const registry = createRegistry();
  registry.global.register(writeTool);
  registry.global.register(editTool);
  const scope = registry.scope('preset:bench').child('agent:bench');
  installCheckpoints(scope);
  const plain: AgentScope = { id: agentId, sessionId: 'bench', services: { sandbox } };
  const tracked: AgentScope = { ...plain, services: { sandbox, checkpoints } };
  let n = 0;
  const one = async (agent: AgentScope, name: string, args: unknown): Promise<string> => {
    const id = `c${++n}`;
    const [result] = await scope.execute([{ id, name, arguments: args }], { agent });
    if (!result?.ok) throw new Error(`${name} failed: ${JSON.stringify(result?.error)}`);
    return id;
  };
  const edits = async (agent: AgentScope): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < EDITS; i++)
      ids.push(
        await one(agent, 'edit', {
          file_path: 'src.ts',
          old_string: `const line${i} = ${i};`,
          new_string: `const LINE${i} = ${i * 2};`,
        }),
      );
    return ids;
  };
  for (let round = -1; round < ROUNDS; round++) {
    const writes = await timed(async () => {
      for (let i = 0; i < EDITS; i++) await one(plain, 'write', { file_path: 'src.ts', content: source });
    });
    const editsUntracked = await timed(() => edits(plain));
    await one(plain, 'write', { file_path: 'src.ts', content: source });
    let ids: string[] = [];
    const editsTracked = await timed(async () => {
      ids = await edits(tracked);
    });
    const rollback = await timed(() => checkpoints.rollback({ callId: ids[0] as string }, 'api'));
    if ((await sandbox.fs.readFile('src.ts')).toString() !== source)
      throw new Error('the rollback was not exact');
    if (round < 0) continue; // the first round warms the engine and the caches
    for (const [k, v] of Object.entries({ writes, editsUntracked, editsTracked, rollback })) rows[k]?.push(v);
  }
  const m = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<
    string,
    number
  >;
  const ms = (x: number | undefined) => `${(x ?? 0).toFixed(0).padStart(6)} ms`;
  const vs = (x: number | undefined) => `${((x ?? 0) / (m.writes ?? 1)).toFixed(3)}x the writes`;
  console.log(
    `rollback bench: ${ROUNDS} rounds, medians; workspaces: ${loop ? 'loop images' : 'Docker volumes'}`,
  );
  console.log(`  baseline: ${EDITS} writes of the file, untracked   ${ms(m.writes)}`);
  console.log(
    `  ${EDITS} edits, untracked                         ${ms(m.editsUntracked)}  ${vs(m.editsUntracked)}`,
  );
  console.log(
    `  ${EDITS} edits, checkpointed                      ${ms(m.editsTracked)}  ${vs(m.editsTracked)}`,
  );
  console.log(`  rollback of the ${EDITS} checkpointed edits        ${ms(m.rollback)}  ${vs(m.rollback)}`);
  const per = ((m.editsTracked ?? 0) - (m.editsUntracked ?? 0)) / EDITS;
  console.log(`  a checkpoint adds per edit                        ${per.toFixed(2).padStart(6)} ms`);
} finally {
  await provider.destroy(agentId).catch(() => undefined);
  await provider.close();
  await removeBenchResources(docker, run);
  await workspaces.sweep([], true).catch(() => undefined);
  await rm(workspacesDir, { recursive: true, force: true }).catch(() => undefined);
  await rm(`${workspacesDir}-links`, { recursive: true, force: true }).catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
}
