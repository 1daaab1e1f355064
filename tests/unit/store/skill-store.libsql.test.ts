import { createSkillStore } from '../../../host/store/skills.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from './harness.ts';
import { runSkillStoreContract } from './skill-store.contract.ts';

runSkillStoreContract({
  name: 'libsql',
  async open(options = {}) {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      store: createSkillStore(db, options.now),
      tenant: async (name) => (await createTenantStore(db).createTenant(name)).id,
      reopen: async () => createSkillStore(temp.connect(), options.now),
      close: temp.cleanup,
    };
  },
});
