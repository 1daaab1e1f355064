// Migration 4: agents created before it get their remote tools from their session log, once, at
// the first start with this code: the creation config's, replaced by the last registration.
import { afterEach, expect, it } from 'vitest';
import { createAgentStore } from '../../../host/store/agents.ts';
import { openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import { MIGRATIONS, migrate } from '../../../host/store/migrations.ts';
import { asOlderCode, tempDatabase } from './harness.ts';

let temp: ReturnType<typeof tempDatabase> | undefined;
afterEach(() => temp?.cleanup());

/** A database as the code before migration 4 left it, with tenant tn_a. */
const beforeMigration4 = () => {
  temp = tempDatabase();
  const db = openDatabase({ path: temp.path });
  migrate(
    db,
    MIGRATIONS.filter((m) => m.version < 4),
  );
  db.exec(`INSERT INTO tenants (id, name, created_at) VALUES ('tn_a', 'a', 0)`);
  return db;
};

const tool = (name: string, description = name) => ({ name, description, parameters: { type: 'object' } });

it('back-fills the remote tools of agents made before it from their config and last registration', async () => {
  const db = beforeMigration4();
  const agent = db.prepare(
    `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at, deleted_at) VALUES (?, 'tn_a', 'standard', 'native', ?, 0, ?)`,
  );
  agent.run('agt_config', JSON.stringify({ remoteTools: [tool('from_config')] }), null);
  agent.run('agt_registered', JSON.stringify({ remoteTools: [tool('from_config')] }), null);
  agent.run('agt_large', '{}', null);
  agent.run('agt_none', '{}', null);
  agent.run('agt_deleted', '{}', 1);
  // Past the inline threshold: the registration's large values sit in `payloads`.
  const large = [tool('big', 'd'.repeat(40 * 1024)), tool('small')];
  await asOlderCode(db, async () => {
    const log = createLibsqlEventLog(db, { index: false }); // as the code before the index wrote it
    const registered = (sessionId: string, tools: unknown[]) =>
      log.append([{ sessionId, type: 'agent.remote_tools', surface: 'log-only', data: { tools } as never }]);
    const call = (sessionId: string, id: string) =>
      log.append([
        {
          sessionId,
          type: 'tool.call',
          surface: 'current',
          callId: id,
          data: { name: 'bash', arguments: {} },
        },
      ]);
    call('agt_config', 'c1');
    registered('agt_registered', [tool('from_config'), tool('first')]);
    call('agt_registered', 'c2');
    registered('agt_registered', [tool('first'), tool('second')]);
    call('agt_registered', 'c3');
    registered('agt_large', large);
    registered('agt_deleted', [tool('gone')]);
    await log.flush();
    await log.close();
  });
  const refs = db.prepare(`SELECT refs FROM events WHERE session_id = 'agt_large'`).all() as {
    refs: string | null;
  }[];
  expect(refs[0]?.refs).not.toBeNull();

  expect(migrate(db)[0]).toBe(4);
  const agents = createAgentStore(db);
  const all = await agents.listAll({ includeDeleted: true });
  const remote = (id: string) => all.find((a) => a.id === id)?.remoteTools;
  expect(remote('agt_config')).toEqual([tool('from_config')]);
  expect(remote('agt_registered')).toEqual([tool('first'), tool('second')]);
  expect(remote('agt_large')).toEqual(large);
  expect(remote('agt_none')).toEqual([]);
  expect(remote('agt_deleted')).toEqual([]);
  db.close();
});

it('keeps what came before a registration whose large values were not kept', async () => {
  const db = beforeMigration4();
  db.exec(`INSERT INTO agents (id, tenant_id, preset, mode, config, created_at)
      VALUES ('agt_1', 'tn_a', 'standard', 'native', '{"remoteTools":[{"name":"kept","description":"k","parameters":{"type":"object"}}]}', 0);`);
  await asOlderCode(db, async () => {
    const log = createLibsqlEventLog(db, { index: false }); // as the code before the index wrote it
    log.append([
      {
        sessionId: 'agt_1',
        type: 'agent.remote_tools',
        surface: 'log-only',
        data: { tools: [tool('big', 'd'.repeat(40 * 1024))] },
      },
    ]);
    await log.flush();
    await log.close();
  });
  db.exec('DELETE FROM payloads');

  expect(migrate(db)[0]).toBe(4);
  expect((await createAgentStore(db).get('tn_a', 'agt_1'))?.remoteTools).toEqual([
    { name: 'kept', description: 'k', parameters: { type: 'object' } },
  ]);
  db.close();
});
