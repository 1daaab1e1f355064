// What the session log's full-text index costs and buys, `node bench/session-search.ts`.
// 1. Cost per logged event: the libsql event log with the index (event-log.ts) against the same
//    log without it (`index: false`), same machine, same run, same events (tool calls and results
//    with realistic text), written 32 calls per tick as concurrent agents write them.
// 2. Search latency over 100k events (10 sessions of one tenant, plus another tenant's 20k events
//    the search must never see): a word written once 90k events back, a word in every result (the
//    newest 20 are returned), a two-word query, one session only, and a word nobody wrote.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { createAgentStore } from '../host/store/agents.ts';
import { type Database, openDatabase } from '../host/store/db.ts';
import { createLibsqlEventLog } from '../host/store/event-log.ts';
import { createEventSearch } from '../host/store/event-search.ts';
import { migrate } from '../host/store/migrations.ts';
import { createTenantStore } from '../host/store/tenants.ts';
import type { SessionEventInput } from '../host/store/types.ts';

const WORDS = 'alpha build cache deploy error fixture graph handler index journal kernel lambda module'.split(
  ' ',
);
const text = (i: number) =>
  `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} src/module_${i % 500}.ts line ${i} ` +
  `${'drwxr-xr-x 2 agent agent 4096 Dec  2 10:40 src\n'.repeat(4)}`;
const pair = (sessionId: string, i: number, marker = ''): SessionEventInput[] => [
  {
    sessionId,
    type: 'tool.call',
    surface: 'current',
    callId: `call_${i}`,
    data: { name: 'bash', arguments: { command: `grep -rn handler_${i % 97} src`, description: 'find it' } },
  },
  {
    sessionId,
    type: 'tool.result',
    surface: 'current',
    callId: `call_${i}`,
    data: {
      name: 'bash',
      ok: true,
      content: [{ type: 'text', text: `${text(i)} ${marker}` }],
      durationMs: 3,
    },
  },
];

const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-search-'));
const open = (name: string): Database => {
  const db = openDatabase({ path: join(dir, `${name}.db`) });
  migrate(db);
  return db;
};
/** A tenant with `n` agents (sessions) in `db`. */
const agentsIn = async (db: Database, n: number) => {
  const tenant = (await createTenantStore(db).createTenant('bench')).id;
  const agents = createAgentStore(db);
  const sessions: string[] = [];
  for (let i = 0; i < n; i++)
    sessions.push(
      (await agents.create({ tenantId: tenant, preset: 'standard', mode: 'native', config: {} })).id,
    );
  return { tenant, sessions };
};

/** Writes `pairs` call+result pairs, 32 calls per tick; µs per event, final flush included. */
const write = async (
  log: ReturnType<typeof createLibsqlEventLog>,
  sessions: string[],
  pairs: number,
  from = 0,
  marker?: (i: number) => string,
): Promise<number> => {
  const start = performance.now();
  for (let i = from; i < from + pairs; i++) {
    void log.append(pair(sessions[i % sessions.length]!, i, marker?.(i)));
    if (i % 32 === 31) await tick();
  }
  await log.flush();
  return ((performance.now() - start) * 1000) / (pairs * 2);
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  // ---- 1. indexing cost per event ------------------------------------------------------------
  const plainDb = open('plain');
  const indexedDb = open('indexed');
  const plain = await agentsIn(plainDb, 10);
  const indexed = await agentsIn(indexedDb, 10);
  const plainLog = createLibsqlEventLog(plainDb, { index: false });
  const indexedLog = createLibsqlEventLog(indexedDb);
  const rounds: { plain: number; indexed: number }[] = [];
  for (let r = 0; r < 5; r++) {
    // Alternate which goes first, so neither always gets the warmer cache.
    const order = r % 2 === 0 ? ['plain', 'indexed'] : ['indexed', 'plain'];
    const round = { plain: 0, indexed: 0 };
    for (const which of order) {
      round[which as 'plain' | 'indexed'] =
        which === 'plain'
          ? await write(plainLog, plain.sessions, 4000, r * 4000)
          : await write(indexedLog, indexed.sessions, 4000, r * 4000);
    }
    rounds.push(round);
  }
  const p = median(rounds.map((x) => x.plain));
  const q = median(rounds.map((x) => x.indexed));
  console.log('durable log, 32 calls per tick, 40k events each (median of 5 rounds of 8k):');
  console.log(`  without the index  ${p.toFixed(1)} µs per event`);
  console.log(
    `  with the index     ${q.toFixed(1)} µs per event  (+${(q - p).toFixed(1)} µs, ×${(q / p).toFixed(2)})`,
  );
  plainLog.close();
  indexedLog.close();
  plainDb.close();
  indexedDb.close();

  // ---- 2. search latency over 100k events ----------------------------------------------------
  const db = open('search');
  const mine = await agentsIn(db, 10);
  const theirs = await agentsIn(db, 2);
  const log = createLibsqlEventLog(db);
  await write(log, theirs.sessions, 10_000, 0, (i) => (i === 5 ? 'needle-7f3a' : ''));
  await write(log, mine.sessions, 50_000, 0, (i) => (i === 5_000 ? 'needle-7f3a' : ''));
  const search = createEventSearch(db);
  const cases: [string, Parameters<typeof search.search>[0]][] = [
    ['a word written once, 90k events back', { tenantId: mine.tenant, query: 'needle-7f3a', limit: 20 }],
    ['a word in every result (newest 20)', { tenantId: mine.tenant, query: 'drwxr', limit: 20 }],
    ['two words, one with punctuation', { tenantId: mine.tenant, query: 'deploy module_42', limit: 20 }],
    [
      'one session only',
      { tenantId: mine.tenant, query: 'kernel', sessionIds: [mine.sessions[3]!], limit: 20 },
    ],
    ['the newest 200 of a common word', { tenantId: mine.tenant, query: 'agent', limit: 200 }],
    ['a word nobody wrote', { tenantId: mine.tenant, query: 'nonexistentword', limit: 20 }],
  ];
  console.log('\nsearch over 100k events of one tenant (+20k of another), median of 50:');
  for (const [what, query] of cases) {
    const times: number[] = [];
    let hits = 0;
    for (let i = 0; i < 50; i++) {
      const start = performance.now();
      hits = (await search.search(query)).length;
      times.push(performance.now() - start);
    }
    console.log(`  ${what.padEnd(40)} ${median(times).toFixed(2)} ms  (${hits} hits)`);
  }
  const leaked = (await search.search({ tenantId: mine.tenant, query: 'needle-7f3a', limit: 20 })).filter(
    (h) => !mine.sessions.includes(h.sessionId),
  );
  console.log(`  hits from the other tenant: ${leaked.length}`);
  log.close();
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
