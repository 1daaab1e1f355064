// The scale-out surfaces against a hostile node (docs/security.md "Nodes"), with real processes: a
// control plane (startServer) whose DSH_NODES are a real node agent (`host/cli.ts node` on a
// private engine: ../nodes/engine.ts) and `h`, a machine holding a valid node certificate whose
// agent answers what it likes. A node's reach must end at the agents placed on it: its pool counts
// never break /metrics, an answer of 1 GiB (here to `adopt`, at the control plane's start) fails
// that call and never the process, `adopt` never names an agent to a node it is not on (before,
// every node was sent every agent id), and naming another node's agents in `adopt` never moves
// them to it (before, the restart's adopt recorded the tenant's agent on `h`, which got its calls).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';
import { PROTOCOL } from '../../../host/sandbox/nodes/remote/protocol.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { makeCa, makeCert } from '../../../scripts/node-certs.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json } from '../api/served.ts';
import { certifyControlPlane, controlPlaneConfig, type NodeAgent, startNodeAgent } from '../nodes/cluster.ts';
import { type Engine, startEngine } from '../nodes/engine.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-scaleout-'));
const ca = join(dir, 'ca');
const METRICS_KEY = 'metrics-key-for-scaleout-0123456789';
let engine: Engine | undefined;
let nodeA: NodeAgent | undefined;
let hostile: Server | undefined;
let running: Running | undefined;
const logs: string[] = [];

/** What the hostile node answers to `adopt`: nothing, 1 GiB, or the agent ids in `claims`. */
let adopt: 'none' | 'bomb' | 'claim' = 'none';
/** The agent ids the hostile node names in `adopt` (it is told none: it learnt them elsewhere). */
let claims: string[] = [];
/** Every adopt body the hostile node received. */
const adoptBodies: string[] = [];
/** Bytes the hostile node managed to send of its last 1 GiB answer. */
let poured = 0;

const serveHostile = async (): Promise<Server> => {
  const pem = (name: string) => readFileSync(join(ca, name), 'utf8');
  const server = createServer(
    { cert: pem('h.pem'), key: pem('h.key'), ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Loose;
        const method = req.url?.slice('/v1/'.length) ?? '';
        const send = (value: unknown) => res.end(JSON.stringify(value));
        res.on('error', () => {});
        if (method === 'info')
          return send({
            protocol: PROTOCOL,
            name: 'h',
            defaults: DOCKER_DEFAULT_LIMITS,
            maxima: DOCKER_DEFAULT_MAXIMA,
            ready: 'lots',
          });
        if (method === 'capacity')
          return send({
            node: 'h',
            cpus: 1,
            memoryBytes: 1,
            sandboxes: 0,
            running: 0,
            pool: { ready: 'lots', size: 0 },
            runtimes: ['runc'],
          });
        if (method === 'adopt') adoptBodies.push(Buffer.concat(chunks).toString('utf8'));
        if (method === 'adopt' && adopt === 'claim')
          return send(body.ask === true ? { questions: { sandboxes: [], agents: [] } } : { names: claims });
        if (method === 'adopt' && adopt === 'bomb') {
          poured = 0;
          const chunk = Buffer.alloc(1024 * 1024, 0x20);
          const more = (): void => {
            while (poured < 1024 ** 3 && !res.destroyed) {
              poured += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', more);
            }
            res.end();
          };
          return more();
        }
        if (method === 'adopt') return send({ names: [] });
        if (method === 'find') return send({ sandbox: null });
        if (method === 'state') return send({ state: 'absent' });
        if (method === 'pooled') return send({ ids: [], size: 0 });
        return send({});
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
};

/** The control plane, (re)started on the same data folder and store. */
const start = async (): Promise<Running> => {
  await running?.close();
  const port = ((hostile as Server).address() as { port: number }).port;
  const config = controlPlaneConfig(
    ca,
    join(dir, 'control'),
    [
      { name: 'a', url: (nodeA as NodeAgent).url },
      { name: 'h', url: `https://127.0.0.1:${port}` },
    ],
    { metricsKey: METRICS_KEY },
  );
  await certifyControlPlane(ca, config);
  running = await startServer(config, { log: (line) => logs.push(line) });
  return running;
};

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'a', ['127.0.0.1']);
  makeCert(ca, ca, 'h', ['127.0.0.1']);
  engine = await startEngine(sandboxImage());
  nodeA = await startNodeAgent(ca, 'a', engine);
  hostile = await serveHostile();
}, 300_000);

afterAll(async () => {
  await running?.close();
  hostile?.closeAllConnections();
  await new Promise<void>((resolve) => (hostile === undefined ? resolve() : hostile.close(() => resolve())));
  await nodeA?.stop();
  await engine?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

const bash = async (r: Running, key: string, agent: string, command: string): Promise<Loose> => {
  const res = await json(r, key, 'POST', `/v1/agents/${agent}/calls`, {
    calls: [{ id: 'c', name: 'bash', arguments: { command, description: 'probe' } }],
  });
  return res.json?.results?.[0];
};
const out = (r: Loose): string => (r?.content ?? []).map((p: Loose) => p.text ?? '').join('');

it("keeps a tenant's agent on its node through a hostile node's pool counts, 1 GiB adopt and claims", async () => {
  let r = await start();
  const key = (await r.store.tenants.createTenant('tenant-a')).apiKey;
  const created = await json(r, key, 'POST', '/v1/agents', {});
  expect(created.status).toBe(201);
  const agent = created.json.id as string;
  expect((await bash(r, key, agent, 'echo kept > kept.txt')).ok).toBe(true);

  // A pool count of 'lots' from h: /metrics still answers (a gauge of '0lots' threw there).
  const metrics = await fetch(`${r.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_KEY}` } });
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toMatch(/^dsh_warm_pool_available 0$/m);

  // A restart while h answers adopt with 1 GiB: h's adopt fails, the control plane starts.
  adopt = 'bomb';
  r = await start();
  expect(poured).toBeLessThan(1024 ** 3);
  expect(out(await bash(r, key, agent, 'cat kept.txt'))).toContain('kept');

  // A restart while h claims the agent (named to it by no one: adopt sends a node only the
  // answers about its own containers): the agent stays on a, with its file.
  adopt = 'claim';
  claims = [agent];
  r = await start();
  expect(adoptBodies.join('\n')).not.toContain(agent);
  // a's adopt, in two steps over the real node agent, found the agent's container: the count is
  // what the nodes name (a's one container, and h's word for what it claims, which moves nothing).
  expect(logs.filter((l) => l.includes('re-adopted')).at(-1)).toMatch(
    new RegExp(`re-adopted ${1 + claims.length} agent sandbox`),
  );
  const read = await bash(r, key, agent, 'cat kept.txt');
  expect(read?.ok, JSON.stringify(read)).toBe(true);
  expect(out(read)).toContain('kept');
}, 60_000);
