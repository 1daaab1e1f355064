import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../host/store/db.ts';
import { INSTANCE_ID, MIGRATIONS, migrate, openStore } from '../../../host/store/index.ts';
import { tempDatabase } from './harness.ts';

describe('openStore', () => {
  let temp: ReturnType<typeof tempDatabase>;
  afterEach(() => temp.cleanup());

  it('writes queued events and keeps pending requests when closed, for the next start to find', async () => {
    temp = tempDatabase();
    const first = openStore({ dataDir: temp.dir });
    void first.events.append([{ sessionId: 's', type: 'tool.call', surface: 'current', data: { n: 1 } }]);
    const request = await first.requests.create({
      sessionId: 's',
      kind: 'remote_tool',
      callId: 'c1',
      payload: { name: 'lookup' },
      expiresAt: Date.now() + 60_000,
    });
    first.close();
    first.close();
    const second = openStore({ dataDir: temp.dir });
    try {
      expect((await second.events.list('s')).map((e) => e.type)).toEqual(['tool.call', 'request.created']);
      expect((await second.requests.list('s', 'pending')).map((r) => r.id)).toEqual([request.id]);
    } finally {
      second.close();
    }
  });

  it('keeps flushed events and created requests when the process is killed without closing', async () => {
    temp = tempDatabase();
    const entry = fileURLToPath(new URL('../../../host/store/index.ts', import.meta.url));
    const script = join(temp.dir, 'crash.ts');
    writeFileSync(
      script,
      `import { openStore } from ${JSON.stringify(entry)};
      const store = openStore({ dataDir: ${JSON.stringify(temp.dir)} });
      for (let i = 0; i < 100; i++) void store.events.append([{ sessionId: 's', type: 'tool.call', surface: 'current', data: i }]);
      await store.requests.create({ sessionId: 's', kind: 'approval', callId: 'c', payload: {}, expiresAt: Date.now() + 60000 });
      await store.events.flush();
      process.kill(process.pid, 'SIGKILL');`,
    );
    const child = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 15_000 });
    expect(child.signal).toBe('SIGKILL');
    const store = openStore({ dataDir: temp.dir });
    try {
      expect((await store.events.list('s')).map((e) => e.seq)).toEqual(
        Array.from({ length: 101 }, (_, i) => i + 1),
      );
      expect(await store.requests.list('s', 'pending')).toHaveLength(1);
    } finally {
      store.close();
    }
  });

  it('works on :memory: for tests', async () => {
    temp = tempDatabase();
    const store = openStore({ path: ':memory:' });
    expect(await store.tenants.listTenants()).toEqual([]);
    store.close();
  });

  it('gives each store one instance id, made once and kept across restarts (also for a store older than it)', () => {
    temp = tempDatabase();
    const first = openStore({ dataDir: temp.dir });
    const id = first.instanceId;
    first.close();
    expect(id).toMatch(INSTANCE_ID);
    const again = openStore({ dataDir: temp.dir });
    expect(again.instanceId).toBe(id);
    again.close();
    const other = openStore({ path: ':memory:' });
    expect(other.instanceId).toMatch(INSTANCE_ID);
    expect(other.instanceId).not.toBe(id);
    other.close();

    // A database written before instance ids existed gets one on its first start with this code.
    const old = join(temp.dir, 'old.db');
    const db = openDatabase({ path: old });
    migrate(db, MIGRATIONS.slice(0, 1));
    db.close();
    const upgraded = openStore({ path: old });
    expect(upgraded.instanceId).toMatch(INSTANCE_ID);
    upgraded.close();
  });
});
