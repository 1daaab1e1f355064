// The session log's full-text index (migration 7, event-log.ts, event-search.ts): events logged
// before the index existed are indexed by the migration; a query is words, never FTS5 syntax; a
// large value is indexed once, with the event that first stored it; tenants never cross.
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import { createEventSearch } from '../../../host/store/event-search.ts';
import { MIGRATIONS, migrate } from '../../../host/store/migrations.ts';
import { ftsExpression, indexText } from '../../../host/store/search-text.ts';
import { asOlderCode, tempDatabase } from './harness.ts';

let temp: ReturnType<typeof tempDatabase> | undefined;
afterEach(() => temp?.cleanup());

const result = (sessionId: string, text: string) => ({
  sessionId,
  type: 'tool.result',
  surface: 'current' as const,
  callId: 'c',
  data: { name: 'bash', ok: true, content: [{ type: 'text', text }] },
});

describe('the index', () => {
  it('migration 7 indexes the events logged before it', async () => {
    temp = tempDatabase();
    const db = openDatabase({ path: temp.path });
    migrate(
      db,
      MIGRATIONS.filter((m) => m.version < 7),
    );
    // The tenant and agent rows as the schema before migration 7 has them (today's stores write
    // columns later migrations added).
    const tenant = 'tnt_before7';
    const agent = { id: 'agt_before7' };
    db.prepare('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)').run(tenant, 'a', Date.now());
    db.prepare(
      "INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES (?, ?, 'standard', 'native', '{}', ?)",
    ).run(agent.id, tenant, Date.now());
    await asOlderCode(db, async () => {
      const old = createLibsqlEventLog(db, { index: false }); // as the code before the index wrote it
      await old.append([result(agent.id, 'written before the index: walrus-1234')]);
      await old.close();
    });
    expect(
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 7),
      ),
    ).toEqual([7]);
    const search = createEventSearch(db);
    expect(await search.search({ tenantId: tenant, query: 'walrus-1234', limit: 5 })).toEqual([
      expect.objectContaining({ sessionId: agent.id, seq: 1, type: 'tool.result' }),
    ]);
    db.close();
  });
  // How an index is written and read (tenants apart, a large value indexed once): event-search.contract.ts.
});

describe('queries', () => {
  it('quote every word, so no query is FTS5 syntax, and bind every query to its tenant', () => {
    expect(ftsExpression('a OR b*', 'tn')).toBe(`owner : ("t746e") AND body : ("a" AND "OR" AND "b*")`);
    expect(ftsExpression('say "hi"', 'tn', ['s1'])).toBe(
      `owner : ("t746e" AND ("s7331")) AND body : ("say" AND """hi""")`,
    );
    expect(ftsExpression('  ** -- ', 'tn')).toBeUndefined();
  });

  it("index an event's words, not its keys, and the log's own readers by name only", () => {
    expect(
      indexText('tool.call', JSON.stringify({ name: 'write', arguments: { file_path: 'a.ts', n: 3 } })),
    ).toBe('tool.call write a.ts 3');
    expect(
      indexText(
        'tool.call',
        JSON.stringify({ name: 'session_event_search', arguments: { query: 'secret' } }),
      ),
    ).toBe('tool.call session_event_search');
  });
});
