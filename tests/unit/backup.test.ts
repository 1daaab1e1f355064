// Backup and restore of the libsql store through the command line, as an operator does it
// (docs/operations.md): `backup` of a running service while it takes calls, `restore` into a fresh
// data directory with the secrets key copied apart, and the restored store serving the same
// tenants, agents, logs and sealed secrets through the API. A wrong or missing key, a file that is
// no store, an existing target or backup file: refused with a stable code, nothing left behind.
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../host/store/db.ts';
import { until } from '../helpers/until.ts';
import { type Api, type Loose, makeApi } from './api/harness.ts';

const CLI = fileURLToPath(new URL('../../host/cli.ts', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'dsh-backup-'));
const apis: Api[] = [];
// Closing the services (their stores' writer threads included) took over the default 10 s once in
// a CI run on a loaded machine; they close in parallel, with a minute for all.
afterAll(async () => {
  await Promise.all(apis.map((api) => api.close()));
  rmSync(root, { recursive: true, force: true });
}, 60_000);

const cli = async (dataDir: string, args: string[], env: Record<string, string> = {}) => {
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

const serviceOn = async (dataDir: string): Promise<Api> => {
  const api = await makeApi({}, { store: { path: join(dataDir, 'store.db') } });
  apis.push(api);
  return api;
};

const SECRET = { headers: { authorization: 'Bearer upstream-secret-token' } };

it('backs up a service under load and restores it on a fresh data directory with its secrets', async () => {
  const old = join(root, 'old');
  const api = await serviceOn(old);
  const agent = await api.createAgent(api.keyA);
  await api.call(api.keyA, agent.id, [
    { id: 'w', name: 'write', arguments: { file_path: 'notes.md', content: 'before the backup\n' } },
  ]);
  // A backup holds what is committed: wait until the writer thread (slow to start on a loaded
  // machine) has stored the first call, as a service that has run a while has.
  const durable = openDatabase({ path: join(old, 'store.db') });
  await until(() => (durable.prepare('SELECT count(*) AS n FROM events').all()[0] as { n: number }).n >= 2, {
    timeoutMs: 60_000,
  });
  durable.close();
  await api.store.egress.put(api.tenantA, { credentials: [{ host: 'api.example.com', ...SECRET }] });
  // Sealed beside the egress credentials: an (unused) agent's MCP server headers.
  const other = await api.createAgent(api.keyA);
  await api.store.agents.setMcpServers(api.tenantA, other.id, [{ name: 'docs', ...SECRET }]);

  // Load: calls keep landing while the backup runs, a few hundred a second. (Back to back with no
  // pause, the backup command took 108 s on a quiet machine against 0.5 s paced: a saturating
  // write load starves it; the cause is not found yet, see docs/operations.md.)
  let stop = false;
  let calls = 0;
  const load = (async () => {
    while (!stop) {
      const res = await api.call(api.keyA, agent.id, [
        { id: `r${calls}`, name: 'read', arguments: { file_path: 'notes.md' } },
      ]);
      expect(res.status).toBe(200);
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const backupFile = join(root, 'store.backup');
  const backup = await cli(old, ['backup', backupFile]);
  stop = true;
  await load;
  expect(backup).toMatchObject({ code: 0, json: { file: backupFile, keyFile: join(old, 'store.db.key') } });
  expect(calls).toBeGreaterThan(0);
  // The backup holds no key; a second backup to the same file is refused, the first kept.
  expect(readdirSync(root).filter((f) => f.startsWith('store.backup'))).toEqual(['store.backup']);
  const again = await cli(old, ['backup', backupFile]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('CONFIG_INVALID');

  // A fresh machine: the key copied apart, then the restore.
  const fresh = join(root, 'fresh');
  mkdirSync(fresh, { mode: 0o700 });
  copyFileSync(join(old, 'store.db.key'), join(fresh, 'store.db.key'));
  const restored = await cli(fresh, ['restore', backupFile]);
  expect(restored).toMatchObject({
    code: 0,
    json: { restored: join(fresh, 'store.db'), instanceId: backup.json.instanceId, sealedValues: 2 },
  });
  expect((await cli(fresh, ['verify'])).json).toMatchObject({ sealedValues: 2 });
  // Restoring over a store is refused.
  expect((await cli(fresh, ['restore', backupFile])).stderr).toContain('fresh data directory');

  const back = await serviceOn(fresh);
  const got = await back.request(api.keyA, 'GET', `/v1/agents/${agent.id}`);
  expect(got.status).toBe(200);
  const events = (await back.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json.events;
  expect(events.find((e: Loose) => e.type === 'tool.result' && e.callId === 'w')?.data.ok).toBe(true);
  expect(await back.store.egress.get(api.tenantA)).toEqual({
    credentials: [{ host: 'api.example.com', ...SECRET }],
  });
  expect((await back.store.agents.byId(other.id))?.mcpServers).toEqual([{ name: 'docs', ...SECRET }]);
  // And it serves: a new call on the restored agent, the other tenant still walled off.
  const res = await back.call(api.keyA, agent.id, [
    { id: 'after', name: 'write', arguments: { file_path: 'after.md', content: 'restored\n' } },
  ]);
  expect(res.json.results[0].ok).toBe(true);
  expect((await back.request(api.keyB, 'GET', `/v1/agents/${agent.id}`)).status).toBe(404);

  // The key in DSH_SECRETS_KEY instead of a key file works too.
  const byEnv = join(root, 'by-env');
  const key = readFileSync(join(old, 'store.db.key'), 'utf8').trim();
  expect((await cli(byEnv, ['restore', backupFile], { DSH_SECRETS_KEY: key })).code).toBe(0);
}, 240_000); // each command line is a process of its own, slow on a loaded machine

it('refuses a restore under the wrong key, without a key, or of a file that is no store, leaving nothing', async () => {
  const old = join(root, 'sealed');
  const api = await serviceOn(old);
  await api.store.egress.put(api.tenantA, { credentials: [{ host: 'api.example.com', ...SECRET }] });
  const backupFile = join(root, 'sealed.backup');
  expect((await cli(old, ['backup', backupFile])).code).toBe(0);

  const wrong = join(root, 'wrong');
  mkdirSync(wrong, { mode: 0o700 });
  writeFileSync(join(wrong, 'store.db.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`);
  const refused = await cli(wrong, ['restore', backupFile]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/CONFIG_INVALID: 1 of the store's 1 sealed secret\(s\) do not open/);
  expect(readdirSync(wrong)).toEqual(['store.db.key']);

  const keyless = join(root, 'keyless');
  const missing = await cli(keyless, ['restore', backupFile]);
  expect(missing.stderr).toContain('CONFIG_INVALID');
  expect(missing.stderr).toContain('no secrets key was given');
  expect(existsSync(join(keyless, 'store.db'))).toBe(false);

  const junk = join(root, 'junk.db');
  writeFileSync(junk, 'not a database at all'.repeat(100));
  const bad = await cli(join(root, 'junk-target'), ['restore', junk]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/STORE_FAILED|CONFIG_INVALID/);
  expect(existsSync(join(root, 'junk-target', 'store.db'))).toBe(false);
  expect((await cli(join(root, 'nowhere'), ['backup', join(root, 'x.db')])).stderr).toContain(
    'no database file',
  );
  expect((await cli(old, ['backup'])).code).toBe(2);
}, 240_000);
