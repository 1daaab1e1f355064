// Two services on one engine as an operator runs them (issue 10 §2): `startServer` with its default
// docker provider, each with its own data directory and port, driven over HTTP. The provider gets
// its instance id from the store, so a restarted service re-adopts its own agents and leaves the
// other's agents and warm pool alone.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../host/config.ts';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/index.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import { loopWorkspaces, removeLabelled, sandboxImage } from './fixtures.ts';

const docker = new Docker();
const servers: Running[] = [];
const dataDirs: string[] = [];
const instances = new Set<string>();

afterAll(async () => {
  for (const s of servers) await s.close().catch(() => {});
  // The default provider labels by instance only: remove exactly these two instances' things.
  for (const id of instances) await removeLabelled(docker, `dsh.instance=${id}`);
  for (const dir of dataDirs) {
    if (loopWorkspaces) await createLoopWorkspaces(join(dir, 'workspaces')).sweep([], true);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Starts a service on `dataDir`; a tenant key is made on first start and passed back in later. */
const start = async (dataDir: string, key?: string): Promise<{ server: Running; key: string }> => {
  const config = loadConfig(
    {
      host: '127.0.0.1',
      port: 0,
      dataDir,
      poolSize: 1,
      isolateWorkers: 1,
      shutdownGraceMs: 1000,
      sandboxImage: sandboxImage(),
      diskQuota: loopWorkspaces,
      workspaceMb: 64,
    },
    {},
  );
  const server = await startServer(config, { log: () => {} });
  servers.push(server);
  instances.add(server.store.instanceId);
  return { server, key: key ?? (await server.store.tenants.createTenant('t')).apiKey };
};

const api = async (s: { server: Running; key: string }, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${s.server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${s.key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, never> };
};

const bash = async (s: { server: Running; key: string }, agentId: string, command: string) => {
  const r = await api(s, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: 'c', name: 'bash', arguments: { command, description: 'probe' } }],
  });
  expect(r.status).toBe(200);
  const [result] = r.json.results as unknown as Array<{ ok: boolean; content: Array<{ text?: string }> }>;
  expect(result?.ok, JSON.stringify(result)).toBe(true);
  return (result?.content ?? []).map((p) => p.text ?? '').join('');
};

const readyPool = async (instanceId: string) =>
  (
    await docker.listContainers({
      filters: { label: [`dsh.instance=${instanceId}`, 'dsh.pool=1'], status: ['running'] },
    })
  )
    .filter((c) => c.Names.some((n) => n.includes('-pool-')))
    .map((c) => c.Id);

describe('two services on one engine', () => {
  it("restarting one re-adopts its own agents and leaves the other's agents and pool working", async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'dsh-serve-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'dsh-serve-b-'));
    dataDirs.push(dirA, dirB);
    const a = await start(dirA);
    let b = await start(dirB);
    const idB = b.server.store.instanceId;
    expect(a.server.store.instanceId).not.toBe(idB);

    const agentOf = async (s: typeof a) =>
      (await api(s, 'POST', '/v1/agents', {})).json.id as unknown as string;
    const a1 = await agentOf(a);
    const b1 = await agentOf(b);
    await bash(a, a1, 'echo from-a > f.txt');
    await bash(b, b1, 'echo from-b > f.txt');

    // A is idle with a ready pool container while B restarts on the same data directory.
    await expect.poll(() => readyPool(a.server.store.instanceId), { timeout: 60_000 }).toHaveLength(1);
    const poolA = await readyPool(a.server.store.instanceId);
    await b.server.close();
    b = await start(dirB, b.key);
    expect(b.server.store.instanceId).toBe(idB);

    const a2 = await agentOf(a);
    expect(await bash(a, a2, 'echo fresh')).toContain('fresh');
    expect(poolA).toContain((await a.server.store.agents.listAll()).find((x) => x.id === a2)?.sandboxId);
    expect(await bash(a, a1, 'cat f.txt')).toContain('from-a');
    expect(await bash(b, b1, 'cat f.txt')).toContain('from-b');
  });
});
