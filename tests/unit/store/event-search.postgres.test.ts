// The EventSearch contract against PostgreSQL (host/store/pg/event-search.ts) in the run's private
// cluster, over what the Postgres event log indexes (host/store/pg/event-log.ts): a fresh database
// per case. Plus what only Postgres's query building could get wrong: search-box text is never
// tsquery syntax, a term with punctuation is a phrase, words are cut and folded as FTS5 cuts them,
// and owner tokens are not searchable text; and the same queries find the same events as on libsql.
import { afterEach, expect, it } from 'vitest';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import { createEventSearch } from '../../../host/store/event-search.ts';
import { createPgAgentStore } from '../../../host/store/pg/agents.ts';
import { createPgEventLog } from '../../../host/store/pg/event-log.ts';
import { createPgEventSearch } from '../../../host/store/pg/event-search.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { ownerTokens } from '../../../host/store/search-text.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { type EventSearchInstance, runEventSearchContract } from './event-search.contract.ts';
import { tempDatabase } from './harness.ts';

const openPgSearch = async (): Promise<EventSearchInstance> => {
  const database = await createStoreDatabase();
  const db = database.open();
  const log: ClosableEventLog = createPgEventLog(db);
  const agents = createPgAgentStore(db);
  const tenants = createPgTenantStore(db);
  return {
    search: createPgEventSearch(db),
    log,
    tenant: async (name) => (await tenants.createTenant(name)).id,
    async agent(tenantId, parentId) {
      const links = parentId === undefined ? {} : { links: { parentId, role: 'child' as const, depth: 1 } };
      return (await agents.create({ tenantId, preset: 'standard', mode: 'native', config: {}, ...links })).id;
    },
    async deleteAgent(tenantId, id) {
      await agents.markDeleted(tenantId, id);
    },
    async cleanup() {
      await log.close();
      await database.drop();
    },
  };
};

describePostgres('EventSearch (postgres)', () => {
  runEventSearchContract({ name: 'postgres', open: openPgSearch });

  let instance: EventSearchInstance | undefined;
  afterEach(async () => {
    await instance?.cleanup();
    instance = undefined;
  });

  it('takes search-box text as words, never as tsquery syntax; punctuation makes a phrase', async () => {
    instance = await openPgSearch();
    const { search, log, tenant, agent } = instance;
    const t = await tenant('t');
    const s = await agent(t);
    const say = (text: string) => ({
      sessionId: s,
      type: 'tool.result',
      surface: 'current' as const,
      data: { content: [{ type: 'text', text }] },
    });
    await log.append([
      say("it's pelican-77 & (grey | white)"),
      say('77 pelican'),
      say("o'neil: a:b"),
      say('Café crème'),
    ]);
    await log.flush();
    const seqs = async (query: string) =>
      (await search.search({ tenantId: t, query, limit: 10 })).map((h) => h.seq);
    expect(await seqs('pelican-77')).toEqual([1]); // a phrase: not the second event's words apart
    expect(await seqs('pelican 77')).toEqual([2, 1]);
    expect(await seqs("it's")).toEqual([1]);
    expect(await seqs('PELICAN-77')).toEqual([1]); // case folded, as FTS5's unicode61
    expect(await seqs('cafe CREME')).toEqual([4]); // diacritics removed, as FTS5's unicode61
    expect(await seqs('café')).toEqual([4]);
    expect(await seqs('& | ! ( ) <-> :* grey')).toEqual([1]);
    expect(await seqs("o'neil: a:b")).toEqual([3]);
    expect(await seqs("'; DROP TABLE events; --")).toEqual([]);
    // The owner tokens are weight A: a search for them is a search of the text, which lacks them.
    const [tenantToken, sessionToken] = ownerTokens(t, s).split(' ');
    expect(await seqs(tenantToken!)).toEqual([]);
    expect(await seqs(sessionToken!)).toEqual([]);
  });

  it('finds what libsql finds for the same events and queries', async () => {
    const texts = [
      'pelican-77 grey',
      '77 pelican',
      "it's O'Neil's session_event_read",
      'Café crème naïve résumé',
      'path /usr/local/bin/node --version 24.1.0',
      'email someone@example.com and https://example.com/a?b=c',
      'CamelCaseWord snake_case_word 3.14159 1e5',
      '日本語 テキスト 検索',
    ];
    const queries = [
      'pelican-77',
      'pelican 77',
      'grey pelican',
      "it's",
      "o'neil",
      'session_event_read',
      'event read',
      'cafe',
      'CRÈME naive',
      '/usr/local/bin/node',
      'bin node',
      '24.1.0',
      '24',
      'someone@example.com',
      'example com',
      'https://example.com/a?b=c',
      'camelcaseword',
      'snake_case_word',
      'case',
      '3.14159',
      '1e5',
      '日本語',
      'テキスト 検索',
      'nothing',
    ];
    const events = texts.map((text) => ({
      sessionId: 'agt_1',
      type: 'tool.result',
      surface: 'current' as const,
      data: { content: [{ type: 'text', text }] },
    }));
    const database = await createStoreDatabase();
    const temp = tempDatabase();
    try {
      const pg = database.open();
      await pg.query("INSERT INTO tenants (id, name, created_at) VALUES ('ten_1', 't', 0)");
      await pg.query(
        "INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES ('agt_1', 'ten_1', 'p', 'native', '{}', 0)",
      );
      const lite = temp.connect();
      lite.exec("INSERT INTO tenants (id, name, created_at) VALUES ('ten_1', 't', 0)");
      lite.exec(
        "INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES ('agt_1', 'ten_1', 'p', 'native', '{}', 0)",
      );
      const pgLog = createPgEventLog(pg);
      const liteLog = createLibsqlEventLog(lite);
      await Promise.all([pgLog.append(events), liteLog.append(events)]);
      await Promise.all([pgLog.flush(), liteLog.flush()]);
      const pgSearch = createPgEventSearch(pg);
      const liteSearch = createEventSearch(lite);
      const found = async (search: typeof pgSearch, query: string) =>
        `${query} → ${(await search.search({ tenantId: 'ten_1', query, limit: 20 })).map((h) => h.seq).join(',')}`;
      for (const query of queries) expect(await found(pgSearch, query)).toBe(await found(liteSearch, query));
      await Promise.all([pgLog.close(), liteLog.close()]);
    } finally {
      temp.cleanup();
      await database.drop();
    }
  });
});
