// Backup and restore of a PostgreSQL store as docs/operations.md tells it: pg_dump -Fc of the live
// database, pg_restore into a fresh one, then `verify` (host/store/pg/verify.ts): migrated, every
// sealed secret opened with the key the replicas are given, a wrong key refused with CONFIG_INVALID
// (data.secretsKey) before any service reads garbage; the restored store serves what the old held.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { openPgStore } from '../../../host/store/pg/index.ts';
import { verifyPg } from '../../../host/store/pg/verify.ts';
import { findPostgresBin } from '../../../scripts/setup/postgres.ts';
import { createDatabase, describePostgres } from '../../helpers/postgres.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../host/cli.ts', import.meta.url));
const SECRET = { credentials: [{ host: 'api.example.com', headers: { authorization: 'Bearer kept' } }] };

describePostgres('backup and restore (postgres)', () => {
  it('pg_dump of a live store, pg_restore into a fresh database, verify, then the store as it was', async () => {
    const bin = (await findPostgresBin()) as string;
    const key = Buffer.alloc(32, 3);
    const live = await createDatabase();
    const fresh = await createDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'dsh-pgdump-'));
    try {
      const store = await openPgStore({ url: live.url, secretsKey: key, eventBatchWindowMs: 0 });
      const tenant = await store.tenants.createTenant('acme');
      const agent = await store.agents.create({
        tenantId: tenant.id,
        preset: 'standard',
        mode: 'direct',
        config: {},
      });
      await store.events.append([
        { sessionId: agent.id, type: 'message.user', surface: 'current', data: { n: 1 } },
      ]);
      await store.events.flush();
      await store.egress.put(tenant.id, SECRET);
      // The dump is taken while the store is open (its pool and wake-up listener connected).
      const file = join(dir, 'store.dump');
      await run(join(bin, 'pg_dump'), ['-Fc', '--no-owner', '-f', file, '-d', live.url]);
      await store.close();
      await run(join(bin, 'pg_restore'), ['--no-owner', '--exit-on-error', '-d', fresh.url, file]);

      await expect(verifyPg(fresh.url, Buffer.alloc(32, 4), 'secrets.key')).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        data: { secretsKey: 'mismatch', sealedValues: 1, unopened: 1 },
      });
      await expect(verifyPg(fresh.url, undefined, 'secrets.key')).rejects.toMatchObject({
        data: { secretsKey: 'missing' },
      });
      expect(await verifyPg(fresh.url, key, 'secrets.key')).toMatchObject({
        instanceId: store.instanceId,
        sealedValues: 1,
      });
      // The same through the command line, as the operator runs it.
      const cli = (args: string[], secretsKey: Buffer) =>
        run(process.execPath, ['--no-node-snapshot', CLI, ...args], {
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH ?? '',
            DSH_DATA_DIR: dir,
            DSH_DB: fresh.url,
            DSH_SECRETS_KEY: secretsKey.toString('base64'),
          },
        }).then(
          ({ stdout }) => ({ code: 0, out: stdout }),
          (e: { code: number; stderr: string }) => ({ code: e.code, out: e.stderr }),
        );
      expect(JSON.parse((await cli(['verify'], key)).out)).toMatchObject({ sealedValues: 1 });
      const wrong = await cli(['verify'], Buffer.alloc(32, 4));
      expect(wrong).toMatchObject({
        code: 1,
        out: expect.stringContaining('CONFIG_INVALID: 1 of the store'),
      });
      expect((await cli(['backup', join(dir, 'x.db')], key)).out).toContain('pg_dump');

      const restored = await openPgStore({ url: fresh.url, secretsKey: key, eventBatchWindowMs: 0 });
      try {
        expect((await restored.tenants.verifyKey(tenant.apiKey))?.id).toBe(tenant.id);
        expect((await restored.events.list(agent.id)).map((e) => e.data)).toEqual([{ n: 1 }]);
        expect(await restored.egress.get(tenant.id)).toEqual(SECRET);
        // It takes new writes after the restored ones (its sequences came along).
        await restored.events.append([
          { sessionId: agent.id, type: 'message.user', surface: 'current', data: { n: 2 } },
        ]);
        await restored.events.flush();
        expect((await restored.events.list(agent.id)).map((e) => e.seq)).toEqual([1, 2]);
      } finally {
        await restored.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await live.drop();
      await fresh.drop();
    }
  }, 120_000);
});
