// The EventSearch contract against PostgreSQL (host/store/pg/event-search.ts) in the run's private
// cluster, over what the Postgres event log indexes (host/store/pg/event-log.ts): a fresh database
// per case. Plus what only Postgres's query building could get wrong: search-box text is never
// tsquery syntax, a term with punctuation is a phrase, words are cut and folded as FTS5 cuts them,
// and owner tokens are not searchable text.
import { afterEach, expect, it } from 'vitest';
import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import { createPgAgentStore } from '../../../host/store/pg/agents.ts';
import { createPgEventLog } from '../../../host/store/pg/event-log.ts';
import { createPgEventSearch } from '../../../host/store/pg/event-search.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { ownerTokens } from '../../../host/store/search-text.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { type EventSearchInstance, runEventSearchContract } from './event-search.contract.ts';

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
});
