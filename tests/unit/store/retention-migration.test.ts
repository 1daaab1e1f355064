// The log retention migration (22 when written) on a log written before it: every payload's `uses` is counted from the events that
// name it (once per event, whatever the session or how often the event names it), the same count
// the event writes keep from then on, so retention never removes a payload a kept event still uses.
import { afterEach, expect, it } from 'vitest';
import { openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import { createLogRetentionStore } from '../../../host/store/log-retention.ts';
import { MIGRATIONS, migrate } from '../../../host/store/migrations.ts';
import { asOlderCode, tempDatabase } from './harness.ts';

let temp: ReturnType<typeof tempDatabase> | undefined;
afterEach(() => temp?.cleanup());

const big = (c: string) => c.repeat(40 * 1024);
/** The log retention migration's version (found by name: a merge may renumber it). */
const RETENTION_VERSION = MIGRATIONS.find((m) => m.name.startsWith('log retention'))!.version;

it('counts the uses of payloads stored before it as the writes count them', async () => {
  temp = tempDatabase();
  const db = openDatabase({ path: temp.path });
  migrate(
    db,
    MIGRATIONS.filter((m) => m.version < RETENTION_VERSION),
  );
  db.exec(`INSERT INTO tenants (id, name, created_at) VALUES ('tn_a', 'a', 0), ('tn_b', 'b', 0)`);
  const agent = db.prepare(
    `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES (?, ?, 'standard', 'direct', '{}', 0)`,
  );
  agent.run('agt_1', 'tn_a');
  agent.run('agt_2', 'tn_a');
  agent.run('agt_3', 'tn_b');
  // The writes of this build count uses as they store; asOlderCode takes the column away again
  // after, so the migration finds the log as the code before it left it, and must count the same.
  const counted = await asOlderCode(db, async () => {
    const log = createLibsqlEventLog(db);
    const say = (sessionId: string, data: Record<string, string>) =>
      log.append([{ sessionId, type: 'message.user', surface: 'current', data }]);
    await say('agt_1', { text: big('p') });
    await say('agt_1', { a: big('p'), b: big('p'), c: big('q') });
    await say('agt_2', { text: big('p') });
    await say('agt_3', { text: big('p') });
    await say('agt_3', { text: 'small' });
    await log.close();
    return db.prepare('SELECT tenant_id, sha256, uses FROM payloads ORDER BY tenant_id, sha256').all();
  });
  expect(counted.map((r) => (r as { uses: number }).uses).sort()).toEqual([1, 1, 3]);

  migrate(db);
  expect(db.prepare('SELECT tenant_id, sha256, uses FROM payloads ORDER BY tenant_id, sha256').all()).toEqual(
    counted,
  );
  // Removing agt_1's events leaves p (used by agt_2) and takes q with its last use.
  const slice = await createLogRetentionStore(db).sweepSlice('tn_a', { before: Number.MAX_SAFE_INTEGER }, 2);
  expect(slice).toMatchObject({ sessionId: 'agt_1', events: 2, payloads: 1 });
  db.close();
});
