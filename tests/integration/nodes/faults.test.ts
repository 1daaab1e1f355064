// Node faults and cordons (docs/nodes.md, "Faults", "Cordon and drain"): two private Docker
// engines (./engine.ts), a node agent on each (./cluster.ts), a control plane with both in
// DSH_NODES and an admin key. Agents spread over both keep their node across a control-plane
// restart (their files with them, none placed twice); when b's node agent is killed, b's agents'
// calls fail at once with NODE_UNREACHABLE naming b, GET /v1/agents/:id reads `unreachable`, GET
// /v1/nodes shows b unreachable, a's agents carry on, and no agent of b is made again on a; the
// node agent started again on the same port, engine and data brings b's agents back with their
// files, without a control-plane restart; b's engine stopped and started again does the same; a
// call in flight fails with NODE_UNREACHABLE naming b when b's node agent is killed under it, and
// with SANDBOX_UNAVAILABLE when only its container is killed (b answers); b's node agent stopped
// with SIGTERM while sessions are open (one with a call in flight) exits at once (code 0), that
// call fails with NODE_UNREACHABLE, and the agents work once it is started again; a
// control plane started while b is down starts, fails b's agents the same way and takes b in when
// it answers. A
// cordon through the admin API (tenant keys refused) sends new agents elsewhere and holds across a
// restart; uncordoned, b takes agents again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LABEL_AGENT, LABEL_INSTANCE } from '../../../host/sandbox/docker/index.ts';
import { naming } from '../../../host/sandbox/docker/ownership.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { makeCa, makeCert } from '../../../scripts/node-certs.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json } from '../api/served.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';
import { certifyControlPlane, controlPlaneConfig, type NodeAgent, startNodeAgent } from './cluster.ts';
import { type RestartableEngine, startEngine } from './engine.ts';

const ADMIN = 'admin-key-of-the-node-fault-test';
const dir = mkdtempSync(join(tmpdir(), 'dsh-faults-'));
const ca = join(dir, 'ca');
const engines: Record<string, RestartableEngine> = {};
const nodeAgents: Record<string, NodeAgent> = {};
let running: Running | undefined;

const controlPlane = async (): Promise<Running> => {
  const config = controlPlaneConfig(
    ca,
    join(dir, 'control'),
    [
      { name: 'a', url: (nodeAgents.a as NodeAgent).url },
      { name: 'b', url: (nodeAgents.b as NodeAgent).url },
    ],
    { adminKey: ADMIN },
  );
  await certifyControlPlane(ca, config);
  running = await startServer(config, { log: () => {} });
  return running;
};

const server = (): Running => running as Running;

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'a', ['127.0.0.1']);
  makeCert(ca, ca, 'b', ['127.0.0.1']);
  const [a, b] = await Promise.all([startEngine(sandboxImage()), startEngine(sandboxImage())]);
  Object.assign(engines, { a, b });
  const [na, nb] = await Promise.all([startNodeAgent(ca, 'a', a), startNodeAgent(ca, 'b', b)]);
  Object.assign(nodeAgents, { a: na, b: nb });
  await controlPlane();
}, 300_000);

afterAll(async () => {
  await running?.close();
  await Promise.all(Object.values(nodeAgents).map((agent) => agent.stop()));
  await Promise.all(Object.values(engines).map((e) => e.stop()));
  rmSync(dir, { recursive: true, force: true });
  // Each engine stops its containers first (up to 30 s before SIGKILL): generous on a loaded machine.
}, 240_000);

interface Made {
  id: string;
  key: string;
  content: string;
}

const made: Made[] = [];

const raw = (agent: Made, name: string, args: Record<string, unknown>) =>
  json(server(), agent.key, 'POST', `/v1/agents/${agent.id}/calls`, {
    calls: [{ id: 'c1', name, arguments: args }],
  });

const call = async (agent: Made, name: string, args: Record<string, unknown>): Promise<Loose> => {
  const r = await raw(agent, name, args);
  expect(r.json.results?.[0]?.ok, JSON.stringify(r.json)).toBe(true);
  return r.json.results[0];
};

const readsBack = async (agent: Made): Promise<void> => {
  const out = await call(agent, 'bash', { command: 'cat mine.txt', description: 'read back' });
  expect(out.value.stdout).toBe(agent.content);
};

/** Agent ids with a container of this control plane's instance on each engine. */
const onEngines = async (): Promise<Record<string, string[]>> => {
  const out: Record<string, string[]> = {};
  for (const [name, e] of Object.entries(engines)) {
    const list = await e.docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_INSTANCE}=${server().store.instanceId}`] },
    });
    out[name] = list.flatMap((c) => (c.Labels[LABEL_AGENT] ? [c.Labels[LABEL_AGENT]] : [])).sort();
  }
  return out;
};

const nodesView = async (key = ADMIN) => json(server(), key, 'GET', '/v1/nodes');
const nodeOf = async (name: string): Promise<Loose> =>
  (await nodesView()).json.nodes.find((n: Loose) => n.name === name);
const agentState = async (agent: Made): Promise<Loose> =>
  (await json(server(), agent.key, 'GET', `/v1/agents/${agent.id}`)).json.state;

let placedAt: Record<string, string[]> = {};
const onB = (): Made => made.find((m) => placedAt.b?.includes(m.id)) as Made;
const onA = (): Made => made.find((m) => placedAt.a?.includes(m.id)) as Made;

it("keeps each agent's node and files across a control-plane restart", async () => {
  for (let i = 0; i < 4; i++) {
    const key = (await server().store.tenants.createTenant(`fault-${i}`)).apiKey;
    const id = (await json(server(), key, 'POST', '/v1/agents', {})).json.id as string;
    const agent = { id, key, content: `agent ${i}\n` };
    await call(agent, 'write', { file_path: 'mine.txt', content: agent.content });
    made.push(agent);
  }
  placedAt = await onEngines();
  expect(placedAt.a?.length, JSON.stringify(placedAt)).toBeGreaterThanOrEqual(1);
  expect(placedAt.b?.length, JSON.stringify(placedAt)).toBeGreaterThanOrEqual(1);
  const nodes = (await nodesView()).json.nodes as Loose[];
  expect(nodes.map((n) => [n.name, n.reachable, n.cordoned, n.agents])).toEqual([
    ['a', true, false, placedAt.a?.length],
    ['b', true, false, placedAt.b?.length],
  ]);
  expect(nodes[0].url).toBe((nodeAgents.a as NodeAgent).url);
  expect(nodes[0].capacity.cpus).toBeGreaterThan(0);

  await server().close();
  await controlPlane();
  for (const agent of made) await readsBack(agent);
  expect(await onEngines()).toEqual(placedAt);
}, 400_000);

it("fails a killed node agent's agents at once with NODE_UNREACHABLE, reads them unreachable, and brings them back with their files when it returns", async () => {
  const b = onB();
  const a = onA();
  await (nodeAgents.b as NodeAgent).kill();
  const started = performance.now();
  const failed = await raw(b, 'bash', { command: 'true', description: 'on b' });
  const failedMs = performance.now() - started;
  console.log(`node agent killed: a call of its agent failed in ${failedMs.toFixed(0)} ms`);
  expect(failed.json.results?.[0]?.ok, JSON.stringify(failed.json)).toBe(false);
  expect(JSON.stringify(failed.json)).toMatch(/NODE_UNREACHABLE/);
  expect(JSON.stringify(failed.json)).toMatch(/Node b/);
  expect(
    await until(async () => (await agentState(b)).sandbox === 'unreachable' && agentState(b)),
  ).toMatchObject({
    sandbox: 'unreachable',
    node: 'b',
  });
  const again = performance.now();
  const second = await raw(b, 'read', { file_path: 'mine.txt' });
  console.log(
    `node marked unreachable: a call of its agent failed in ${(performance.now() - again).toFixed(0)} ms`,
  );
  expect(JSON.stringify(second.json)).toMatch(/NODE_UNREACHABLE/);
  expect(await nodeOf('b')).toMatchObject({ reachable: false });
  expect((await nodeOf('b')).error).toBeTypeOf('string');
  const live = performance.now();
  await readsBack(a);
  console.log(
    `baseline: a call of an agent on the live node took ${(performance.now() - live).toFixed(0)} ms`,
  );
  // A new agent goes to a; b's agents are not made again there.
  const key = (await server().store.tenants.createTenant('fault-new')).apiKey;
  const fresh = {
    id: (await json(server(), key, 'POST', '/v1/agents', {})).json.id as string,
    key,
    content: '',
  };
  await call(fresh, 'bash', { command: 'true', description: 'placed while b is down' });
  const now = await onEngines();
  expect(now.a).toEqual([...(placedAt.a ?? []), fresh.id].sort());
  await json(server(), key, 'DELETE', `/v1/agents/${fresh.id}`);

  await (nodeAgents.b as NodeAgent).restart();
  const back = performance.now();
  await until(async () => (await agentState(b)).sandbox !== 'unreachable', {
    what: "b's agent to read reachable again",
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  console.log(
    `node agent started again: its agent read reachable after ${(performance.now() - back).toFixed(0)} ms`,
  );
  expect(await nodeOf('b')).toMatchObject({ reachable: true });
  for (const agent of made) await readsBack(agent);
}, 300_000);

it("fails a stopped engine's agents with NODE_UNREACHABLE and brings them back with their files when it starts again", async () => {
  const b = onB();
  await (engines.b as RestartableEngine).halt();
  const started = performance.now();
  const failed = await raw(b, 'bash', { command: 'true', description: 'engine stopped' });
  console.log(`engine stopped: a call of its agent failed in ${(performance.now() - started).toFixed(0)} ms`);
  expect(JSON.stringify(failed.json)).toMatch(/NODE_UNREACHABLE/);
  expect(JSON.stringify(failed.json)).toMatch(/Node b/);
  expect((await agentState(b)).sandbox).toBe('unreachable');
  await readsBack(onA());
  await (engines.b as RestartableEngine).resume();
  const back = performance.now();
  await until(async () => (await agentState(b)).sandbox !== 'unreachable', {
    what: "b's agent to read reachable again",
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  console.log(
    `engine started again: its agent read reachable after ${(performance.now() - back).toFixed(0)} ms`,
  );
  for (const agent of made) await readsBack(agent);
}, 300_000);

/** Whether the agent's long call has begun in its container on `engine` (its marker file exists). */
const begun = async (engine: RestartableEngine, agent: Made): Promise<boolean> => {
  const e = await engine.docker
    .getContainer(naming('dsh', server().store.instanceId).agent(agent.id))
    .exec({ Cmd: ['test', '-f', '/workspace/begun'], AttachStdout: true });
  const stream = await e.start({});
  await new Promise((r) => stream.on('end', r).resume());
  return (await e.inspect()).ExitCode === 0;
};

/** A 30 s bash of `agent` on b, once it has begun there; its answer and when it came (wrapped: not awaited here). */
const longCallOnB = async (agent: Made) => {
  const answered = raw(agent, 'bash', {
    command: 'rm -f begun; touch begun; sleep 30; echo finished',
    description: 'long',
  }).then((r) => ({ r, at: performance.now() }));
  await until(() => begun(engines.b as RestartableEngine, agent), {
    what: 'the long call to begin on b',
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  return { answered };
};

it('fails a call in flight with NODE_UNREACHABLE naming the node when its node agent goes, and with SANDBOX_UNAVAILABLE when only its sandbox dies', async () => {
  const b = onB();
  // The sandbox dies on a live node: the call's sandbox error stands; the next call starts it again.
  let { answered } = await longCallOnB(b);
  const killed = performance.now();
  await (engines.b as RestartableEngine).docker
    .getContainer(naming('dsh', server().store.instanceId).agent(b.id))
    .kill();
  let { r, at } = await answered;
  let result = r.json.results?.[0];
  console.log(
    `sandbox killed mid-call: the call failed ${(at - killed).toFixed(0)} ms after the kill: ${JSON.stringify(result?.error)}`,
  );
  expect(result?.ok, JSON.stringify(r.json)).toBe(false);
  expect(result?.error?.code).toBe('SANDBOX_UNAVAILABLE');
  expect(await nodeOf('b')).toMatchObject({ reachable: true });
  await readsBack(b);

  // The node agent goes: the call fails as the calls after it do, naming the node.
  ({ answered } = await longCallOnB(b));
  const gone = performance.now();
  await (nodeAgents.b as NodeAgent).kill();
  ({ r, at } = await answered);
  result = r.json.results?.[0];
  console.log(
    `node agent killed mid-call: the call failed ${(at - gone).toFixed(0)} ms after the kill began: ${JSON.stringify(result?.error)}`,
  );
  expect(result?.ok, JSON.stringify(r.json)).toBe(false);
  expect(result?.error?.code).toBe('NODE_UNREACHABLE');
  expect(JSON.stringify(result)).toMatch(/Node b/);
  expect(JSON.stringify(result)).not.toContain('finished');
  const next = await raw(b, 'read', { file_path: 'mine.txt' });
  expect(next.json.results?.[0]?.error?.code).toBe('NODE_UNREACHABLE');
  await readsBack(onA());

  await (nodeAgents.b as NodeAgent).restart();
  await until(async () => (await agentState(b)).sandbox !== 'unreachable', {
    what: "b's agent to read reachable again",
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  await readsBack(b);
}, 300_000);

it('stops a node agent promptly on SIGTERM with sessions open: their calls fail with NODE_UNREACHABLE, and they work when it is back', async () => {
  const b = onB();
  const other = made.find((m) => m !== b && placedAt.b?.includes(m.id));
  // Sessions open on b: an idle one, and one with a call in flight.
  if (other !== undefined) await readsBack(other);
  const { answered } = await longCallOnB(b);
  const asked = performance.now();
  const exit = await (nodeAgents.b as NodeAgent).stop();
  const exitedMs = performance.now() - asked;
  const { r, at } = await answered;
  console.log(
    `node agent stopped (SIGTERM) with sessions open: it exited ${exitedMs.toFixed(0)} ms after the signal, ` +
      `the call in flight failed ${(at - asked).toFixed(0)} ms after it: ${JSON.stringify(r.json.results?.[0]?.error)}`,
  );
  expect(exit).toBe(0);
  expect((nodeAgents.b as NodeAgent).output()).toMatch(
    /node: SIGTERM: closing its sessions and stopping\n(.*\n)*node: stopped\n/,
  );
  expect(r.json.results?.[0]?.error?.code, JSON.stringify(r.json)).toBe('NODE_UNREACHABLE');
  expect(JSON.stringify(r.json)).toMatch(/Node b/);
  await readsBack(onA());
  await (nodeAgents.b as NodeAgent).restart();
  await until(async () => (await agentState(b)).sandbox !== 'unreachable', {
    what: "b's agent to read reachable again",
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  await readsBack(b);
}, 300_000);

it('starts while a node is down: its agents fail with NODE_UNREACHABLE, none is made again elsewhere, and they work when it is back', async () => {
  const b = onB();
  await server().close();
  await (nodeAgents.b as NodeAgent).kill();
  await controlPlane();
  const before = await onEngines();
  const failed = await raw(b, 'read', { file_path: 'mine.txt' });
  expect(JSON.stringify(failed.json)).toMatch(/NODE_UNREACHABLE/);
  expect(JSON.stringify(failed.json)).toMatch(/Node b/);
  expect(await agentState(b)).toMatchObject({ sandbox: 'unreachable', node: 'b' });
  expect(await onEngines()).toEqual(before);
  await readsBack(onA());
  await (nodeAgents.b as NodeAgent).restart();
  await until(async () => (await agentState(b)).sandbox !== 'unreachable', {
    what: "b's agent to read reachable again",
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  for (const agent of made) await readsBack(agent);
  expect(await onEngines()).toEqual(before);
}, 300_000);

it('cordons and uncordons a node through the admin API only; a cordon holds across a restart', async () => {
  const tenantKey = (made[0] as Made).key;
  expect((await nodesView(tenantKey)).status).toBe(401);
  expect((await json(server(), tenantKey, 'POST', '/v1/nodes/b/cordon')).status).toBe(401);
  expect((await json(server(), ADMIN, 'POST', '/v1/nodes/nope/cordon')).status).toBe(404);
  expect((await json(server(), ADMIN, 'POST', '/v1/nodes/..%2F..%2Fb/cordon')).status).toBe(404);
  const cordoned = await json(server(), ADMIN, 'POST', '/v1/nodes/b/cordon');
  expect(cordoned.status).toBe(200);
  expect(cordoned.json).toMatchObject({ name: 'b', cordoned: true, reachable: true });

  await server().close();
  await controlPlane();
  expect(await nodeOf('b')).toMatchObject({ cordoned: true });
  const before = await onEngines();
  const fresh: Made[] = [];
  for (let i = 0; i < 3; i++) {
    const key = (await server().store.tenants.createTenant(`cordon-${i}`)).apiKey;
    const agent = {
      id: (await json(server(), key, 'POST', '/v1/agents', {})).json.id as string,
      key,
      content: '',
    };
    await call(agent, 'bash', { command: 'true', description: 'placed while b is cordoned' });
    fresh.push(agent);
  }
  const after = await onEngines();
  expect(after.b).toEqual(before.b);
  expect(after.a).toEqual([...(before.a ?? []), ...fresh.map((f) => f.id)].sort());
  // b's agents keep working while it is cordoned.
  await readsBack(onB());

  const uncordoned = await json(server(), ADMIN, 'POST', '/v1/nodes/b/uncordon');
  expect(uncordoned.json).toMatchObject({ name: 'b', cordoned: false });
  for (const f of fresh) await json(server(), f.key, 'DELETE', `/v1/agents/${f.id}`);
}, 400_000);
