// A remote node (docs/nodes.md): a second, private Docker engine (./engine.ts), a node agent on it
// (`host/cli.ts node`, on loopback, mutual TLS with certificates the `openssl` command made through
// scripts/node-certs.ts), and a control plane whose DSH_NODES names it. An agent's bash, write and
// read calls through the control plane's API run in a container on the second engine (none on the
// main one), over the node's spliced streams (the link socket too), and deleting the agent removes
// its container there; pausing it through the API freezes or stops its container on the node
// (a freeze keeps its background job, which the next call thaws; a stop keeps its files and the
// resume starts it there); an agent asking for gVisor runs under runsc on the node's engine (the
// spec carries the runtime; the engine is started with runsc registered where this machine has
// runsc, tests/helpers/gvisor-engine.ts), or is refused with RUNTIME_UNAVAILABLE by a node whose
// engine lacks it; a connection to the node without a certificate of the cluster's CA is refused,
// and so is a request for an instance the certificate does not name (the node agent logs it).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LINK_MOUNT } from '../../../host/sandbox/docker/config.ts';
import { createDockerProvider, LABEL_INSTANCE } from '../../../host/sandbox/docker/index.ts';
import { naming } from '../../../host/sandbox/docker/ownership.ts';
import { connectRemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import type { SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { gvisorEngineUnavailable, startGvisorEngine } from '../../helpers/gvisor-engine.ts';
import { tlsOf } from '../../helpers/node-tls.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json } from '../api/served.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';
import { certifyControlPlane, controlPlaneConfig } from './cluster.ts';
import { type Engine, startEngine } from './engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-nodes-'));
const ca = join(dir, 'ca');
const rogue = join(dir, 'rogue');
let engine: Engine | undefined;
let agent: ChildProcess | undefined;
let server: Running | undefined;
let url = '';
/** The control plane's log: a link that could not be made through the node is reported there. */
const logged: string[] = [];
/** What the node agent printed (its log). */
let agentOut = '';

/** Starts `host/cli.ts node` on the second engine; resolves with the URL it prints. */
const startNodeAgent = (host: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', 'host/cli.ts', 'node'], {
      env: {
        ...process.env,
        DOCKER_HOST: host,
        DSH_NODE_LISTEN: '127.0.0.1:0',
        DSH_NODE_CERT: join(ca, 'two.pem'),
        DSH_NODE_KEY: join(ca, 'two.key'),
        DSH_NODE_CA: join(ca, 'ca.pem'),
        DSH_DATA_DIR: join(engine?.dir ?? dir, 'node-data'),
        DSH_SANDBOX_IMAGE: sandboxImage(),
        DSH_DISK_QUOTA: 'off',
        DSH_POOL_SIZE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent = child;
    let out = '';
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      agentOut += c.toString();
      const m = /^listening (https:\/\/\S+)$/m.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the node agent exited (${code}):\n${out}\n${err}`)));
  });

/** GET-less probe of the node: POST /v1/info with `tls`; the status, or the connection's error. */
const probe = (tls: { cert?: string; key?: string }): Promise<number | string> =>
  new Promise((resolve) => {
    const u = new URL(url);
    const req = request({
      host: u.hostname,
      port: Number(u.port),
      path: '/v1/info',
      method: 'POST',
      ca: readFileSync(join(ca, 'ca.pem')),
      ...tls,
      agent: false,
      headers: { 'x-dsh-instance': 'probe' },
    });
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end('{}');
  });

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'two', ['127.0.0.1']);
  makeCa(rogue, '/CN=not-the-cluster');
  makeControlCert(rogue, rogue, 'control', ['probe']);
  // The cluster's CA, but another deployment's: it names another instance.
  makeControlCert(ca, ca, 'other', ['other']);
  // With runsc on this machine the node's engine offers gvisor too (else runc alone).
  engine =
    gvisorEngineUnavailable() === undefined
      ? await startGvisorEngine(sandboxImage())
      : await startEngine(sandboxImage());
  url = await startNodeAgent(engine.host);
  const config = controlPlaneConfig(ca, join(dir, 'control'), [{ name: 'two', url }], {
    gvisorTenants: '*',
  });
  // The instances the tests below act for through connectRemoteNode and the probe, too.
  await certifyControlPlane(ca, config, ['linkcheck', 'warmcheck', 'probe']);
  server = await startServer(config, { log: (line) => logged.push(line) });
}, 300_000);

afterAll(async () => {
  await server?.close();
  if (agent?.pid !== undefined && agent.exitCode === null) {
    const exited = new Promise((r) => agent?.once('exit', r));
    process.kill(agent.pid, 'SIGTERM');
    await exited;
  }
  await engine?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

it('runs an agent on the remote node: bash, write and read through the API, its container on the second engine only', async () => {
  const running = server as Running;
  const key = (await running.store.tenants.createTenant('nodes')).apiKey;
  const http = async (path: string, body?: unknown): Promise<Loose> => {
    const res = await json(running, key, body === undefined ? 'GET' : 'POST', path, body);
    expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBeLessThan(300);
    return res.json;
  };
  const created = await http('/v1/agents', { preset: 'standard' });
  const call = async (name: string, args: Record<string, unknown>): Promise<Loose> => {
    const r = await http(`/v1/agents/${created.id}/calls`, { calls: [{ id: name, name, arguments: args }] });
    expect(r.results[0].ok, JSON.stringify(r.results[0])).toBe(true);
    return r.results[0];
  };
  const text = (r: Loose): string => (r.content ?? []).map((p: Loose) => p.text ?? '').join('');

  await call('write', { file_path: 'notes/hello.txt', content: 'from the control plane\n' });
  expect(
    text(await call('bash', { command: 'cat notes/hello.txt; echo ran-here', description: 'read it' })),
  ).toMatch(/from the control plane\s+ran-here/);
  await call('bash', {
    command: 'head -c 300000 /dev/zero | tr "\\0" x > big.txt',
    description: 'a bigger file',
  });
  expect(text(await call('read', { file_path: 'notes/hello.txt' }))).toContain('from the control plane');
  expect(text(await call('bash', { command: 'wc -c < big.txt', description: 'its size' }))).toContain(
    '300000',
  );

  const mine = { filters: { label: [`${LABEL_INSTANCE}=${running.store.instanceId}`] } };
  const there = await (engine as Engine).docker.listContainers(mine);
  const placed = there.find((c) => c.Names.some((n) => n.includes('-agent-')));
  // It has a link folder: the session was offered the link through the node.
  expect(placed?.Mounts.map((m) => m.Destination)).toContain(LINK_MOUNT);
  expect(await new Docker().listContainers({ all: true, ...mine })).toEqual([]);
  // The sessions ran over the sandbox's link socket, spliced by the node (none fell back).
  expect(logged.filter((line) => /attach stream serves instead|link was not made/.test(line))).toEqual([]);
  expect(logged).toContain(`sandboxes: on node two (${url})`);

  // Deleting the agent removes its container on the node.
  expect((await json(running, key, 'DELETE', `/v1/agents/${created.id}`)).status).toBe(204);
  const left = await (engine as Engine).docker.listContainers({ all: true, ...mine });
  expect(left.filter((c) => c.Id === placed?.Id)).toEqual([]);
});

it('pauses and resumes an agent on the remote node: frozen and thawed, stopped and started there', async () => {
  const running = server as Running;
  const key = (await running.store.tenants.createTenant('paused-on-node')).apiKey;
  const id = (await json(running, key, 'POST', '/v1/agents', {})).json.id as string;
  const call = async (name: string, args: Record<string, unknown>): Promise<Loose> => {
    const r = await json(running, key, 'POST', `/v1/agents/${id}/calls`, {
      calls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
    });
    expect(r.json.results?.[0]?.ok, JSON.stringify(r.json)).toBe(true);
    return r.json.results[0];
  };
  const bash = async (command: string): Promise<string> =>
    (await call('bash', { command, description: 'test' })).value.stdout;
  const ticks = async (): Promise<number> => Number((await bash('wc -l < ticks.txt')).trim());
  /** The agent's container on the node's engine, by its name (a pooled one carries no agent label). */
  const container = async (): Promise<{ Running: boolean; Paused: boolean }> => {
    const name = naming('dsh', running.store.instanceId).agent(id);
    const info = await (engine as Engine).docker.getContainer(name).inspect();
    return { Running: info.State.Running, Paused: info.State.Paused };
  };

  await bash('echo kept > keep.txt');
  const job = await call('bash', {
    command: 'while true; do echo t >> ticks.txt; sleep 0.1; done',
    description: 'ticks',
    run_in_background: true,
  });
  await until(async () => (await ticks()) > 2, { what: 'the job to tick' });

  // A freeze: the node freezes the container; the next call thaws it and the job ran on.
  const frozen = await json(running, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'freeze' });
  expect(frozen.status, JSON.stringify(frozen.json)).toBe(200);
  expect(frozen.json.pause).toMatchObject({ mode: 'freeze', by: 'api' });
  expect(await container()).toEqual({ Running: true, Paused: true });
  const before = await ticks();
  expect(await container()).toEqual({ Running: true, Paused: false });
  await until(async () => (await ticks()) > before, { what: 'the thawed job to tick again' });
  const jobs = (await call('job_list', {})).value as Loose[];
  expect(jobs.find((j) => j.id === job.value.jobId)?.status).toBe('running');

  // A stop: the node stops the container; the resume starts it there, its files kept.
  const stopped = await json(running, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'stop' });
  expect(stopped.json.pause).toMatchObject({ mode: 'stop' });
  expect(await container()).toMatchObject({ Running: false });
  expect((await json(running, key, 'POST', `/v1/agents/${id}/resume`)).json).toEqual({
    agentId: id,
    paused: false,
  });
  expect(await container()).toEqual({ Running: true, Paused: false });
  expect(await bash('cat keep.txt')).toBe('kept\n');
  // A hostile mode is refused by the API before anything reaches the node.
  expect((await json(running, key, 'POST', `/v1/agents/${id}/pause`, { mode: 'kill' })).status).toBe(400);
  expect(await container()).toEqual({ Running: true, Paused: false });
  expect((await json(running, key, 'DELETE', `/v1/agents/${id}`)).status).toBe(204);
}, 180_000);

it('runs an agent under gVisor on the node when its engine offers it, else refuses it with RUNTIME_UNAVAILABLE', async () => {
  const running = server as Running;
  const key = (await running.store.tenants.createTenant('gvisor-on-node')).apiKey;
  // The runtimes come from the node's capacity, across the wire.
  const offered = (await json(running, key, 'GET', '/v1/health')).json.runtimes as string[];
  const gvisor = gvisorEngineUnavailable() === undefined;
  expect(offered).toEqual(gvisor ? ['runc', 'gvisor'] : ['runc']);
  const created = await json(running, key, 'POST', '/v1/agents', {
    preset: 'standard',
    sandbox: { runtime: 'gvisor' },
  });
  if (!gvisor) {
    expect(created.status).toBe(400);
    expect(created.json.error.code).toBe('RUNTIME_UNAVAILABLE');
    return;
  }
  expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
  const id = created.json.id as string;
  const r = await json(running, key, 'POST', `/v1/agents/${id}/calls`, {
    calls: [{ id: 'k', name: 'bash', arguments: { command: 'uname -r', description: 'kernel' } }],
  });
  expect(r.json.results[0].ok, JSON.stringify(r.json)).toBe(true);
  // gVisor's kernel answers uname itself, never with the host's release.
  expect(r.json.results[0].value.stdout.trim()).not.toBe(release());
  const name = naming('dsh', running.store.instanceId).agent(id);
  const info = await (engine as Engine).docker.getContainer(name).inspect();
  expect(info.HostConfig.Runtime).toBe('runsc');
  expect((await json(running, key, 'DELETE', `/v1/agents/${id}`)).status).toBe(204);
}, 180_000);

it('refuses connections without a certificate of the cluster CA, or for an instance it does not name, and serves one with it', async () => {
  expect(await probe({})).not.toBe(200);
  expect(
    await probe({
      cert: readFileSync(join(rogue, 'control.pem'), 'utf8'),
      key: readFileSync(join(rogue, 'control.key'), 'utf8'),
    }),
  ).not.toBe(200);
  expect(
    await probe({
      cert: readFileSync(join(ca, 'control.pem'), 'utf8'),
      key: readFileSync(join(ca, 'control.key'), 'utf8'),
    }),
  ).toBe(200);
  // Another control plane's certificate of the same CA, for this one's instance: refused, logged.
  expect(
    await probe({
      cert: readFileSync(join(ca, 'other.pem'), 'utf8'),
      key: readFileSync(join(ca, 'other.key'), 'utf8'),
    }),
  ).toBe(502);
  await until(
    async () =>
      /node: refused instance probe to 127\.0\.0\.1:\d+: its certificate does not name it \(CN=other, role urn:dsh:control-plane, instances other\)/.test(
        agentOut,
      ),
    {
      what: "the node agent's log line",
    },
  );
});

it('moves the session to the link through the node: the channel offers it and sandboxd dials it', async () => {
  const node = await connectRemoteNode({
    name: 'two',
    url,
    instance: 'linkcheck',
    ...tlsOf(ca, 'control'),
  });
  let linked = 0;
  const spied: SandboxNode<unknown> = {
    ...node,
    warmWith: undefined, // the agent's own open, not a warm session (the next test)
    async open(agentId, options) {
      const channel = await node.open(agentId, options);
      const link = channel.link;
      if (!link) return channel;
      return {
        ...channel,
        async link() {
          const offer = await link();
          void offer.accepted.then(
            () => linked++,
            () => {},
          );
          return offer;
        },
      };
    },
  };
  const errors: unknown[] = [];
  const provider = createDockerProvider({
    image: sandboxImage(),
    instance: 'linkcheck',
    node: spied,
    onError: (e) => errors.push(e),
  });
  try {
    const sandbox = await provider.create({ agentId: 'a1', tenantId: 't1' });
    expect((await sandbox.exec('echo over-the-link')).stdout).toBe('over-the-link\n');
    expect(linked).toBe(1);
    expect(errors).toEqual([]);
    await provider.destroy('a1');
    expect(await node.find('a1')).toBeUndefined();
  } finally {
    await provider.close();
  }
});

it("hands an agent from the remote node's pool the session made ahead on it: no open on its way to ready", async () => {
  const options = {
    name: 'two',
    url,
    instance: 'warmcheck',
    ...tlsOf(ca, 'control'),
  };
  const node = await connectRemoteNode(options);
  const opened: string[] = [];
  const spied: SandboxNode<unknown> = {
    ...node,
    async open(agentId, options) {
      opened.push(agentId);
      return node.open(agentId, options);
    },
  };
  const errors: unknown[] = [];
  const provider = createDockerProvider({
    image: sandboxImage(),
    instance: 'warmcheck',
    node: spied,
    onError: (e) => errors.push(e),
  });
  try {
    await provider.pool.filled(); // the node's pool, and this control plane's session on it
    const pooled = (
      await (engine as Engine).docker.listContainers({
        filters: { label: [`${LABEL_INSTANCE}=warmcheck`, 'dsh.pool=1'] },
      })
    ).map((c) => c.Id);
    expect(pooled).toHaveLength(1);
    // Another replica of the instance on the node: the pooled sandbox this one claimed is not its.
    const other = await connectRemoteNode(options);
    try {
      expect([(await node.capacity()).pool, (await other.capacity()).pool]).toEqual([
        { ready: 1, size: 1 },
        { ready: 0, size: 1 },
      ]);
    } finally {
      await other.close();
    }
    const sandbox = await provider.create({ agentId: 'w1', tenantId: 't1' });
    expect(await node.find('w1')).toMatchObject({ id: pooled[0] });
    await sandbox.fs.writeFile('warm.txt', Buffer.from('from the pool'));
    expect((await sandbox.exec('cat warm.txt')).stdout).toBe('from the pool');
    expect((await sandbox.fs.readFile('warm.txt')).toString()).toBe('from the pool');
    expect(opened).toEqual([]); // the warm session served every call
    expect(errors).toEqual([]);
    await provider.destroy('w1');
  } finally {
    await provider.close();
  }
}, 180_000);

it('snapshots an agent on the remote node and makes another from it there, or carries the node refusing', async () => {
  const running = server as Running;
  const key = (await running.store.tenants.createTenant('snapshot-on-node')).apiKey;
  const agentOf = async (body: Loose): Promise<string> => {
    const made = await json(running, key, 'POST', '/v1/agents', body);
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    return made.json.id;
  };
  const bash = async (id: string, command: string): Promise<string> => {
    const r = await json(running, key, 'POST', `/v1/agents/${id}/calls`, {
      calls: [{ id: 'c1', name: 'bash', arguments: { command, description: 'test' } }],
    });
    expect(r.json.results?.[0]?.ok, JSON.stringify(r.json)).toBe(true);
    return r.json.results[0].value.stdout;
  };
  const a = await agentOf({});
  await bash(a, 'echo on-the-node > n.txt');
  const taken = await json(running, key, 'POST', `/v1/agents/${a}/snapshots`);
  // The node's own answer crosses: a node whose workspaces are Docker volumes (its engine not one
  // it can mount loop images for) has no snapshots, and says so.
  if (taken.status === 501) {
    expect(taken.json.error.code).toBe('SNAPSHOT_UNSUPPORTED');
    expect((await json(running, key, 'DELETE', `/v1/agents/${a}`)).status).toBe(204);
    return;
  }
  expect(taken.status, JSON.stringify(taken.json)).toBe(201);
  expect(taken.json).toMatchObject({ agentId: a, node: 'two' });
  const b = await agentOf({ fromSnapshot: taken.json.id });
  expect(await bash(b, 'cat n.txt')).toBe('on-the-node\n');
  const name = naming('dsh', running.store.instanceId).agent(b);
  expect((await (engine as Engine).docker.getContainer(name).inspect()).State.Running).toBe(true);
  expect((await json(running, key, 'DELETE', `/v1/snapshots/${taken.json.id}`)).status).toBe(204);
  for (const id of [a, b]) expect((await json(running, key, 'DELETE', `/v1/agents/${id}`)).status).toBe(204);
}, 180_000);
