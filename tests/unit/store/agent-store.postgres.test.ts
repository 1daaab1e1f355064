// The Postgres AgentStore (host/store/pg/agents.ts) against the run's private cluster: the same
// AgentStore contract as libsql and memory (agent-store.contract.ts), with a sealer as the service
// runs it; `reopen` is a second pool on the same database (a restart, or another replica beside
// the first). Then what only the rows show: MCP server secrets are sealed at rest, a value stored
// before sealing is read as it is, and another key is refused.
import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { createPgAgentStore } from '../../../host/store/pg/agents.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createSealer } from '../../../host/store/sealed.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { runAgentStoreContract } from './agent-store.contract.ts';
import type { AgentStoreHarness } from './agent-store.harness.ts';

const postgresAgentStoreHarness: AgentStoreHarness = {
  name: 'postgres',
  async open(options = {}) {
    const database = await createStoreDatabase();
    const db = database.open();
    const sealer = createSealer(randomBytes(32));
    const tenants = createPgTenantStore(db);
    return {
      agents: createPgAgentStore(db, options.now, sealer),
      tenant: async (name) => (await tenants.createTenant(name)).id,
      reopen: async () => createPgAgentStore(database.open(), options.now, sealer),
      cleanup: () => database.drop(),
    };
  },
};

describePostgres('AgentStore on PostgreSQL', () => {
  runAgentStoreContract(postgresAgentStoreHarness);

  const SECRET = 'TOPSECRET-pg-sealed-4b1e';
  const server = { name: 'git', transport: 'stdio', command: 'git-mcp', env: { TOKEN: SECRET }, tools: [] };
  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });
  const start = async () => {
    database = await createStoreDatabase();
    const db = database.open();
    const tenantId = (await createPgTenantStore(db).createTenant('a')).id;
    return { db, tenantId };
  };
  const stored = async (db: ReturnType<StoreDatabase['open']>, id: string) =>
    (await db.one<{ mcp_servers: string }>('SELECT mcp_servers FROM agents WHERE id = $1', [id]))
      ?.mcp_servers;

  it("keeps MCP servers' secrets sealed in the rows and reads them back", async () => {
    const { db, tenantId } = await start();
    const sealer = createSealer(randomBytes(32));
    const agents = createPgAgentStore(db, Date.now, sealer);
    const agent = await agents.create({ tenantId, preset: 'p', mode: 'native', config: {} });
    expect(await agents.setMcpServers(tenantId, agent.id, [server])).toBe(true);
    const text = await stored(db, agent.id);
    expect(text).toMatch(/^sealed:v1:/);
    expect(text).not.toContain(SECRET);
    expect((await agents.get(tenantId, agent.id))?.mcpServers).toEqual([server]);
    const restarted = createPgAgentStore(database!.open(), Date.now, sealer);
    expect((await restarted.byId(agent.id))?.mcpServers).toEqual([server]);
  });

  it('reads a value stored before sealing as it is, and seals it at its next write', async () => {
    const { db, tenantId } = await start();
    const agents = createPgAgentStore(db, Date.now, createSealer(randomBytes(32)));
    const agent = await agents.create({ tenantId, preset: 'p', mode: 'native', config: {} });
    await db.query('UPDATE agents SET mcp_servers = $1 WHERE id = $2', [JSON.stringify([server]), agent.id]);
    expect((await agents.get(tenantId, agent.id))?.mcpServers).toEqual([server]);
    await agents.setMcpServers(tenantId, agent.id, [server]);
    expect(await stored(db, agent.id)).toMatch(/^sealed:v1:/);
  });

  it('refuses MCP servers sealed under another key with CONFIG_INVALID', async () => {
    const { db, tenantId } = await start();
    const agents = createPgAgentStore(db, Date.now, createSealer(randomBytes(32)));
    const agent = await agents.create({ tenantId, preset: 'p', mode: 'native', config: {} });
    await agents.setMcpServers(tenantId, agent.id, [server]);
    const otherKey = createPgAgentStore(db, Date.now, createSealer(randomBytes(32)));
    await expect(otherKey.get(tenantId, agent.id)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('pages agents with sandboxes in byte order of their ids, as SQLite does, whatever the collation', async () => {
    const { db, tenantId } = await start();
    // The run's cluster collates in byte order (C); an operator's database may be linguistic.
    await db.query('ALTER TABLE agents ALTER COLUMN id TYPE text COLLATE "und-x-icu"');
    for (const id of ['agt_a', 'agt__', 'agt_B', 'agt_-'])
      await db.query(
        "INSERT INTO agents (id, tenant_id, preset, mode, config, sandbox_id, created_at) VALUES ($1, $2, 'p', 'native', '{}', 'ctr', 1)",
        [id, tenantId],
      );
    const agents = createPgAgentStore(db);
    expect((await agents.withSandbox('', 10)).map((a) => a.id)).toEqual(['agt_-', 'agt_B', 'agt__', 'agt_a']);
    expect((await agents.withSandbox('agt_B', 10)).map((a) => a.id)).toEqual(['agt__', 'agt_a']);
  });
});
