// Placement across two remote nodes (docs/nodes.md, "Placement"): two private Docker engines
// (./engine.ts), a node agent on each (`host/cli.ts node`, mutual TLS), and a control plane whose
// DSH_NODES names both: agents created through the API spread over both engines and each works
// there (bash, write, read); a second control plane with DSH_NODES_CORDONED=b places every new
// agent on a; when b's node agent is killed, b's agents' calls fail with NODE_UNREACHABLE naming b
// while a's agents carry on.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../../host/config.ts';
import { LABEL_AGENT, LABEL_INSTANCE } from '../../../host/sandbox/docker/index.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { makeCa, makeCert } from '../../../scripts/node-certs.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json } from '../api/served.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';
import { certifyControlPlane, controlPlaneConfig, type NodeAgent, startNodeAgent } from './cluster.ts';
import { type Engine, startEngine } from './engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-placement-'));
const ca = join(dir, 'ca');
const engines: Record<string, Engine> = {};
const servers: Running[] = [];
const urls: Record<string, string> = {};
/** The node agents by node name. */
const nodeAgents: Record<string, NodeAgent> = {};

const controlPlane = async (name: string, more: Partial<Config> = {}): Promise<Running> => {
  const config = controlPlaneConfig(
    ca,
    join(dir, name),
    [
      { name: 'a', url: urls.a as string },
      { name: 'b', url: urls.b as string },
    ],
    more,
  );
  await certifyControlPlane(ca, config);
  const running = await startServer(config, { log: () => {} });
  servers.push(running);
  return running;
};

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'a', ['127.0.0.1']);
  makeCert(ca, ca, 'b', ['127.0.0.1']);
  const [a, b] = await Promise.all([startEngine(sandboxImage()), startEngine(sandboxImage())]);
  Object.assign(engines, { a, b });
  const [na, nb] = await Promise.all([startNodeAgent(ca, 'a', a), startNodeAgent(ca, 'b', b)]);
  Object.assign(nodeAgents, { a: na, b: nb });
  Object.assign(urls, { a: na.url, b: nb.url });
}, 300_000);

afterAll(async () => {
  for (const s of servers) await s.close();
  for (const agent of Object.values(nodeAgents)) await agent.stop();
  await Promise.all(Object.values(engines).map((e) => e.stop()));
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** An agent of a new tenant of `running`, and a way to run bash in it (its output). */
const agentOn = async (running: Running, tenant: string) => {
  const key = (await running.store.tenants.createTenant(tenant)).apiKey;
  const id = (await json(running, key, 'POST', '/v1/agents', {})).json.id as string;
  const raw = (name: string, args: Record<string, unknown>) =>
    json(running, key, 'POST', `/v1/agents/${id}/calls`, { calls: [{ id: 'c1', name, arguments: args }] });
  const call = async (name: string, args: Record<string, unknown>): Promise<Loose> => {
    const r = await raw(name, args);
    expect(r.json.results?.[0]?.ok, JSON.stringify(r.json)).toBe(true);
    return r.json.results[0];
  };
  return { id, call, raw };
};

/** Agents of the first control plane, kept for the fault test. */
let spread: { running: Running; made: Array<Awaited<ReturnType<typeof agentOn>>> } | undefined;

/** How many agent containers of `running`'s instance each engine holds, by node name. */
const placed = async (running: Running): Promise<Record<string, number>> => {
  const out: Record<string, number> = {};
  for (const [name, e] of Object.entries(engines)) {
    const list = await e.docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_INSTANCE}=${running.store.instanceId}`] },
    });
    out[name] = list.filter((c) => c.Names.some((n) => n.includes('-agent-'))).length;
  }
  return out;
};

it('spreads agents over both nodes, and each works where it landed', async () => {
  const running = await controlPlane('spread');
  const made = [];
  for (let i = 0; i < 4; i++) {
    const agent = await agentOn(running, `spread-${i}`);
    await agent.call('write', { file_path: 'mine.txt', content: `agent ${i}\n` });
    made.push(agent);
  }
  for (const [i, agent] of made.entries()) {
    const out = await agent.call('bash', { command: 'cat mine.txt', description: 'read back' });
    expect(out.value.stdout).toBe(`agent ${i}\n`);
  }
  spread = { running, made };
  const counts = await placed(running);
  expect(counts.a, JSON.stringify(counts)).toBeGreaterThanOrEqual(1);
  expect(counts.b, JSON.stringify(counts)).toBeGreaterThanOrEqual(1);
  expect((counts.a ?? 0) + (counts.b ?? 0)).toBe(4);
}, 300_000);

it('gives a cordoned node no new agents', async () => {
  const running = await controlPlane('cordoned', { nodesCordoned: ['b'] });
  for (let i = 0; i < 3; i++) {
    const agent = await agentOn(running, `cordoned-${i}`);
    await agent.call('bash', { command: 'true', description: 'make its sandbox' });
  }
  expect(await placed(running)).toEqual({ a: 3, b: 0 });
}, 300_000);

it("fails a stopped node's agents with NODE_UNREACHABLE naming it, while the other node's agents carry on", async () => {
  const { running, made } = spread as NonNullable<typeof spread>;
  const onB = new Set(
    (
      await (engines.b as Engine).docker.listContainers({
        all: true,
        filters: { label: [`${LABEL_INSTANCE}=${running.store.instanceId}`] },
      })
    ).map((c) => c.Labels[LABEL_AGENT]),
  );
  const b = made.find((m) => onB.has(m.id));
  const a = made.find((m) => !onB.has(m.id));
  // The node's machine gone: the agent is killed, its sockets reset.
  await (nodeAgents.b as NodeAgent).kill();
  const failed = await (b as NonNullable<typeof b>).raw('bash', { command: 'true', description: 'on b' });
  expect(JSON.stringify(failed.json)).toMatch(/NODE_UNREACHABLE/);
  expect(JSON.stringify(failed.json)).toMatch(/[Nn]ode b/);
  const out = await (a as NonNullable<typeof a>).call('bash', {
    command: 'cat mine.txt',
    description: 'on a',
  });
  expect(out.value.stdout).toMatch(/^agent \d\n$/);
}, 150_000);
