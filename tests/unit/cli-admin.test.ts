// The admin command line (`node host/cli.ts tenants|keys …`) against a data directory, as an
// operator runs it: the same store calls as the admin API, JSON out, a key printed once, a revoked
// key and a deleted tenant's keys refused by a store opened on the same data; nodes cordoned and
// uncordoned in the store the service's placement reads; the store's instance id printed.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, expect, it } from 'vitest';
import { openStore, STORE_FILE } from '../../host/store/index.ts';
import type { Loose } from './api/harness.ts';

const CLI = fileURLToPath(new URL('../../host/cli.ts', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const cliIn =
  (dataDir: string, env: Record<string, string> = {}) =>
  async (...args: string[]) => {
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--no-node-snapshot', CLI, ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', DSH_DATA_DIR: dataDir, ...env },
      });
      return { code: 0, json: JSON.parse(stdout) as Loose, stderr: '' };
    } catch (error) {
      const e = error as { code: number; stderr: string };
      return { code: e.code, json: undefined, stderr: e.stderr };
    }
  };

it('creates, lists and revokes keys and deletes a tenant, as the admin API does', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-cli-'));
  dirs.push(dataDir);
  const cli = cliIn(dataDir);
  const acme = (await cli('tenants', 'create', 'acme')).json;
  expect(acme).toMatchObject({ name: 'acme', apiKey: expect.stringMatching(/^dsk_/) });
  const ci = (await cli('keys', 'create', acme.id, '--name', 'ci', '--expires-at', '2999-01-01T00:00:00Z'))
    .json;
  expect(ci.apiKey).toMatch(/^dsk_/);
  const listed = (await cli('keys', 'list', acme.id)).json;
  expect(listed.map((k: Loose) => [k.name, k.expiresAt])).toEqual([
    [undefined, undefined],
    ['ci', Date.parse('2999-01-01T00:00:00Z')],
  ]);
  expect(JSON.stringify(listed)).not.toContain(ci.apiKey.slice(12));

  const store = () => openStore({ path: join(dataDir, STORE_FILE) });
  const check = async (key: string) => {
    const opened = store();
    try {
      return (await opened.tenants.verifyKey(key))?.id;
    } finally {
      await opened.close();
    }
  };
  expect(await check(ci.apiKey)).toBe(acme.id);
  expect((await cli('keys', 'revoke', acme.id, ci.id)).json).toEqual({ id: ci.id, revoked: true });
  expect(await check(ci.apiKey)).toBeUndefined();
  expect(await check(acme.apiKey)).toBe(acme.id);

  // Hostile or mistaken input: a clear failure, nothing changed.
  expect((await cli('keys', 'revoke', acme.id, ci.id)).code).toBe(1);
  expect((await cli('keys', 'revoke', 'ten_other', acme.keyId)).code).toBe(1);
  expect((await cli('keys', 'create', acme.id, '--expires-at', 'yesterday')).code).toBe(1);
  expect((await cli('keys', 'create', acme.id, '--expires-at', '1000')).code).toBe(1);
  expect((await cli('tenants', 'get', 'ten_nope')).code).toBe(1);
  expect((await cli('keys')).code).toBe(2);
  expect(await check(acme.apiKey)).toBe(acme.id);

  expect((await cli('tenants', 'limits', acme.id, '--agents', '5')).json).toEqual({
    id: acme.id,
    quotas: { agents: 5 },
  });
  expect((await cli('tenants', 'limits', acme.id, '--agents', 'many')).code).toBe(1);
  expect((await cli('tenants', 'limits', acme.id)).json.quotas).toEqual({ agents: 5 });
  // One flag changes its quota and keeps the others.
  expect((await cli('tenants', 'limits', acme.id, '--disk-mb', '4096')).json.quotas).toEqual({
    agents: 5,
    diskMb: 4096,
  });
  expect((await cli('tenants', 'limits', acme.id, '--disk-mb', '-1')).code).toBe(1);
  expect((await cli('tenants', 'limits', acme.id, '--agents', 'none')).json.quotas).toEqual({ diskMb: 4096 });
  expect((await cli('tenants', 'limits', acme.id, '--disk-mb', 'none')).json.quotas).toEqual({});
  // The log budget and the running-plugin cap, together.
  expect(
    (await cli('tenants', 'limits', acme.id, '--log-bytes', '1048576', '--plugins', '4')).json.quotas,
  ).toEqual({ logBytes: 1048576, plugins: 4 });
  expect((await cli('tenants', 'limits', acme.id, '--plugins', '1.5')).code).toBe(1);
  // The checkpoint bytes of all its agents together, kept beside the others.
  expect((await cli('tenants', 'limits', acme.id, '--checkpoint-bytes', '3000')).json.quotas).toEqual({
    logBytes: 1048576,
    plugins: 4,
    checkpointBytes: 3000,
  });
  expect((await cli('tenants', 'limits', acme.id, '--checkpoint-bytes', '-1')).code).toBe(1);
  expect(
    (
      await cli(
        'tenants',
        'limits',
        acme.id,
        '--log-bytes',
        'none',
        '--plugins',
        'none',
        '--checkpoint-bytes',
        'none',
      )
    ).json.quotas,
  ).toEqual({});

  const deleting = (await cli('tenants', 'delete', acme.id)).json;
  expect(deleting).toMatchObject({ id: acme.id, state: 'deleting', remaining: { api_keys: 2 } });
  expect(await check(acme.apiKey)).toBeUndefined();
  expect((await cli('tenants', 'list')).json.map((t: Loose) => t.state)).toEqual(['deleting']);
}, 120_000); // each command is a process of its own

it('lists the nodes of DSH_NODES and cordons one in the store, refusing a name it does not know', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-cli-'));
  dirs.push(dataDir);
  const cli = cliIn(dataDir, {
    DSH_NODES: 'a=https://127.0.0.1:7443,b=https://127.0.0.1:7444',
    DSH_NODES_CORDONED: 'a',
  });
  expect((await cli('nodes', 'list')).json).toEqual([
    { name: 'a', url: 'https://127.0.0.1:7443', cordoned: true, agents: 0 },
    { name: 'b', url: 'https://127.0.0.1:7444', cordoned: false, agents: 0 },
  ]);
  expect((await cli('nodes', 'cordon', 'b')).json).toMatchObject({ name: 'b', cordoned: true });
  const opened = openStore({ path: join(dataDir, STORE_FILE) });
  try {
    expect(await opened.nodes.cordoned()).toEqual(['b']);
  } finally {
    await opened.close();
  }
  expect((await cli('nodes', 'uncordon', 'b')).json).toMatchObject({ name: 'b', cordoned: false });
  const unknown = await cli('nodes', 'cordon', 'c');
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/no node c in DSH_NODES/);
  expect((await cli('nodes', 'cordon')).code).toBe(2);
  // The instance a control plane's node certificate must name: the store's, the same on every ask.
  const { instance } = (await cli('nodes', 'instance')).json;
  const again = openStore({ path: join(dataDir, STORE_FILE) });
  try {
    expect(instance).toBe(again.instanceId);
  } finally {
    await again.close();
  }
});
it('retention status and run: a pass removes what the tenant lets go, as the service does', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-cli-'));
  dirs.push(dataDir);
  const cli = cliIn(dataDir);
  const acme = (await cli('tenants', 'create', 'acme')).json;
  const old = openStore({ path: join(dataDir, STORE_FILE), now: () => Date.now() - 10 * 86_400_000 });
  try {
    const agent = await old.agents.create({
      tenantId: acme.id,
      preset: 'standard',
      mode: 'direct',
      config: {},
    });
    await old.events.append(
      ['one', 'two', 'three'].map((text) => ({
        sessionId: agent.id,
        type: 'message.user',
        surface: 'current' as const,
        data: { text },
      })),
    );
    await old.tenantSettings.put(acme.id, { log: { retentionDays: 5 } });
  } finally {
    await old.close();
  }
  const before = (await cli('retention', 'status')).json;
  expect(before).toMatchObject({ backend: 'libsql', autoVacuum: 'incremental' });
  expect(before.tenants).toEqual([{ tenantId: acme.id, bytes: expect.any(Number) }]);
  expect((await cli('retention', 'run')).json).toMatchObject({ tenants: 1, events: 3 });
  expect((await cli('retention', 'status')).json.tenants).toEqual([]);
  expect((await cli('retention', 'run')).json).toMatchObject({ events: 0 });
  expect((await cli('retention', 'vacuum')).json).toMatchObject({ autoVacuum: 'incremental' });
  expect((await cli('retention', 'sweep')).code).toBe(2);
}, 120_000);
