// What the libsql event log costs on disk (issue 11: one small program stored ~954 MiB by
// repeating one 977 KiB argument 1000 times), and how migration 3 treats logs written before
// payloads existed.
import { existsSync, statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import { MIGRATIONS, migrate } from '../../../host/store/migrations.ts';
import { asOlderCode, tempDatabase } from './harness.ts';

const MiB = 1024 * 1024;
const fileBytes = (path: string) =>
  statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

describe('libsql event log on disk', () => {
  let temp: ReturnType<typeof tempDatabase> | undefined;
  afterEach(() => temp?.cleanup());

  it('1000 calls with the same 1 MiB argument grow the database by about 1 MiB', async () => {
    temp = tempDatabase();
    const db = temp.connect();
    const log = createLibsqlEventLog(db);
    await log.flush();
    const before = fileBytes(temp.path);
    const big = 'x'.repeat(MiB);
    for (let i = 1; i <= 1000; i++) {
      void log.append([
        {
          sessionId: 'agent_1',
          type: 'tool.call',
          surface: 'log-only',
          callId: `c${i}`,
          parentCallId: 'run_1',
          data: { name: 'write', arguments: { file_path: `f${i}.txt`, content: big } },
        },
      ]);
      if (i % 50 === 0) await log.flush();
    }
    log.close();
    db.pragma('wal_checkpoint(TRUNCATE)');
    const grown = fileBytes(temp.path) - before;
    expect(grown).toBeGreaterThan(MiB);
    expect(grown).toBeLessThan(3 * MiB);
  }, 180_000);

  it('migration 3 moves large values of existing events out, keeps them readable and counts usage', async () => {
    temp = tempDatabase();
    const db = openDatabase({ path: temp.path });
    migrate(
      db,
      MIGRATIONS.filter((m) => m.version < 3),
    );
    db.exec(`INSERT INTO tenants (id, name, created_at) VALUES ('tn_a', 'a', 0);
      INSERT INTO agents (id, tenant_id, preset, mode, config, created_at)
        VALUES ('ag_1', 'tn_a', 'standard', 'native', '{}', 0);
      INSERT INTO sessions (id, created_at, last_seq) VALUES ('ag_1', 0, 4);`);
    const big = 'y'.repeat(100 * 1024);
    const insert = db.prepare(
      `INSERT INTO events (session_id, seq, type, surface, call_id, data, at) VALUES ('ag_1', ?, 'tool.call', 'current', ?, ?, 0)`,
    );
    const data = (i: number) => ({ name: 'write', arguments: { file_path: `f${i}`, content: big } });
    for (let i = 1; i <= 3; i++) insert.run(i, `c${i}`, JSON.stringify(data(i)));
    insert.run(4, 'c4', JSON.stringify({ name: 'bash', arguments: { command: 'ls' } }));

    expect(
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 3),
      ),
    ).toEqual([3]);
    const lengths = db.prepare('SELECT length(data) AS n FROM events ORDER BY seq').all() as { n: number }[];
    expect(Math.max(...lengths.map((r) => r.n))).toBeLessThan(1024);
    expect(db.prepare('SELECT count(*) AS n FROM payloads').all()).toEqual([
      expect.objectContaining({ n: 1 }),
    ]);
    await asOlderCode(db, async () => {
      const log = createLibsqlEventLog(db);
      expect((await log.list('ag_1')).map((e) => e.data)).toEqual([
        data(1),
        data(2),
        data(3),
        { name: 'bash', arguments: { command: 'ls' } },
      ]);
      const usage = (await log.usage()).find((u) => u.tenantId === 'tn_a')!.bytes;
      expect(usage).toBeGreaterThan(100 * 1024);
      expect(usage).toBeLessThan(100 * 1024 + 4 * 1024);
      await log.close();
    });
    db.close();
  });
});
