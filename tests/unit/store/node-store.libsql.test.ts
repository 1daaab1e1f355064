import { createNodeStore } from '../../../host/store/nodes.ts';
import { tempDatabase } from './harness.ts';
import { runNodeStoreContract } from './node-store.contract.ts';

runNodeStoreContract({
  name: 'libsql',
  async open() {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      store: createNodeStore(db),
      async addAgent(id, tenant, deleted = false) {
        db.prepare(
          'INSERT INTO tenants (id, name, created_at) VALUES (?, ?, 0) ON CONFLICT(id) DO NOTHING',
        ).run(tenant, tenant);
        db.prepare(
          `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at, deleted_at) VALUES (?, ?, 'p', 'm', '{}', 0, ?)`,
        ).run(id, tenant, deleted ? 1 : null);
      },
      reopen: async () => createNodeStore(temp.connect()),
      close: temp.cleanup,
    };
  },
});
