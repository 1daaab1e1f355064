import { createAgentStore } from '../../../host/store/agents.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import { createEventSearch } from '../../../host/store/event-search.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { runEventSearchContract } from './event-search.contract.ts';
import { tempDatabase } from './harness.ts';

runEventSearchContract({
  name: 'libsql',
  async open() {
    const temp = tempDatabase();
    const db = temp.connect();
    const log = createLibsqlEventLog(db);
    const agents = createAgentStore(db);
    const tenants = createTenantStore(db);
    return {
      search: createEventSearch(db),
      log,
      tenant: async (name) => (await tenants.createTenant(name)).id,
      async agent(tenantId, parentId) {
        const links = parentId === undefined ? {} : { links: { parentId, role: 'child' as const, depth: 1 } };
        return (await agents.create({ tenantId, preset: 'standard', mode: 'native', config: {}, ...links }))
          .id;
      },
      async deleteAgent(tenantId, id) {
        await agents.markDeleted(tenantId, id);
      },
      cleanup() {
        log.close();
        temp.cleanup();
      },
    };
  },
});
