// Text a client sends with a NUL in it (a tenant's name, a skill's SKILL.md) cannot be stored in a
// PostgreSQL text column. The call that carries it is refused as the client's mistake (400
// BAD_REQUEST, saying what to remove), not as the server's (500 STORE_FAILED, which clients and
// proxies retry), and the store goes on serving every other call.
import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

describePostgres('hostile text on PostgreSQL', () => {
  let database: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
    store = undefined;
    database = undefined;
  });

  it('refuses a NUL as a bad request, and serves the next call', async () => {
    database = await createDatabase();
    store = await openPgStore({ url: database.url, poolSize: 2, secretsKey: randomBytes(32) });
    await expect(store.tenants.createTenant('a\0b')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringContaining('NUL'),
    });
    const tenant = await store.tenants.createTenant('fine');
    const skill = {
      name: 'nul',
      description: 'd',
      digest: '0'.repeat(64),
      bytes: 1,
      instructions: 'do\0this',
      files: [{ path: 'SKILL.md', mode: 0o644, content: Buffer.from('x') }],
    };
    await expect(store.skills!.put(tenant.id, skill, 10)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await store.skills!.put(tenant.id, { ...skill, instructions: 'do this' }, 10);
    expect((await store.skills!.list(tenant.id)).map((s) => s.name)).toEqual(['nul']);
  });
});
