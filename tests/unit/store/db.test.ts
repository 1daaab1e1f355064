import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { immediate, openDatabase, stripMetadata } from '../../../host/store/db.ts';
import { latestSchemaVersion, MIGRATIONS, migrate, schemaVersion } from '../../../host/store/migrations.ts';
import { tempDatabase } from './harness.ts';

describe('store database', () => {
  let temp: ReturnType<typeof tempDatabase> | undefined;
  afterEach(() => temp?.cleanup());

  it('opens a local file in WAL mode with a busy timeout, foreign keys and synchronous NORMAL', () => {
    temp = tempDatabase();
    const db = temp.connect();
    expect(db.pragma('journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(db.pragma('busy_timeout')).toEqual([{ timeout: 5000 }]);
    expect(db.pragma('foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    expect(db.pragma('synchronous')).toEqual([{ synchronous: 1 }]);
  });

  it('creates the data directory 0700 and the database file 0600', () => {
    temp = tempDatabase();
    const path = join(temp.dir, 'nested', 'deeper', 'store.db');
    const db = openDatabase({ path });
    db.close();
    expect(statSync(join(temp.dir, 'nested', 'deeper')).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('accepts file: urls and :memory:', () => {
    temp = tempDatabase();
    const db = openDatabase({ url: `file://${join(temp.dir, 'u.db')}` });
    expect(db.pragma('journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    db.close();
    const mem = openDatabase({ path: ':memory:' });
    migrate(mem);
    mem.close();
  });

  it('refuses remote urls with CONFIG_INVALID that says they are not supported yet', () => {
    for (const url of ['libsql://127.0.0.1:9', 'https://127.0.0.1:9', 'ws://127.0.0.1:9']) {
      expect(() => openDatabase({ url })).toThrow(
        expect.objectContaining({
          code: 'CONFIG_INVALID',
          message: expect.stringMatching(/not supported yet/),
        }),
      );
    }
    expect(() => openDatabase({})).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('strips libsql _metadata from .get() rows', () => {
    const db = openDatabase({ path: ':memory:' });
    const row = db.prepare('SELECT 1 AS a').get() as Record<string, unknown>;
    expect(Object.keys(row)).toContain('_metadata');
    expect(JSON.stringify(stripMetadata(row))).toBe('{"a":1}');
    db.close();
  });

  it('rolls an immediate transaction back when its function throws', () => {
    const db = openDatabase({ path: ':memory:' });
    db.exec('CREATE TABLE t (x INTEGER)');
    expect(() =>
      immediate(db, () => {
        db.prepare('INSERT INTO t VALUES (1)').run();
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(db.prepare('SELECT count(*) AS n FROM t').all()).toEqual([{ n: 0 }]);
    expect(() => immediate(db, (async () => 1) as () => unknown)).toThrow(/sync function/);
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it('translates a writer blocked past the busy timeout into STORE_FAILED with the cause', () => {
    temp = tempDatabase();
    const a = temp.connect();
    const b = openDatabase({ path: temp.path, busyTimeoutMs: 50 });
    a.exec('BEGIN IMMEDIATE');
    try {
      expect(() => migrate(b, [...MIGRATIONS, { version: 99, name: 'x', sql: 'SELECT 1' }])).toThrow(
        expect.objectContaining({
          code: 'STORE_FAILED',
          cause: expect.objectContaining({ code: 'SQLITE_BUSY' }),
        }),
      );
    } finally {
      a.exec('ROLLBACK');
      b.close();
    }
  });
});

describe('migrations', () => {
  let temp: ReturnType<typeof tempDatabase> | undefined;
  afterEach(() => temp?.cleanup());

  it('applies every migration once and records it', () => {
    const db = openDatabase({ path: ':memory:' });
    expect(migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(migrate(db)).toEqual([]);
    expect(schemaVersion(db)).toBe(latestSchemaVersion());
    db.close();
  });

  it('runs a failing migration in its own transaction, leaving earlier ones applied', () => {
    const db = openDatabase({ path: ':memory:' });
    const next = latestSchemaVersion() + 1;
    const broken = [
      ...MIGRATIONS,
      { version: next, name: 'broken', sql: 'CREATE TABLE ok2 (x); SELECT * FROM nope;' },
    ];
    expect(() => migrate(db, broken)).toThrow(
      expect.objectContaining({
        code: 'STORE_FAILED',
        message: expect.stringMatching(new RegExp(`migration ${next}`)),
      }),
    );
    expect(schemaVersion(db)).toBe(latestSchemaVersion());
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok2'").all()).toEqual([]);
    db.close();
  });

  it('applies a missing version below the highest applied one (numbers taken out of merge order)', () => {
    const db = openDatabase({ path: ':memory:' });
    const latest = latestSchemaVersion();
    const late = { version: latest + 1, name: 'late', sql: 'CREATE TABLE late (x)' };
    const early = { version: latest + 3, name: 'early', sql: 'CREATE TABLE early (x)' };
    migrate(db, [...MIGRATIONS, early]);
    expect(migrate(db, [...MIGRATIONS, late, early])).toEqual([latest + 1]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'late'").all()).toHaveLength(1);
    db.close();
  });

  it('refuses to start on a database written by newer code', () => {
    temp = tempDatabase();
    const db = temp.connect();
    migrate(db, [...MIGRATIONS, { version: 99, name: 'future', sql: 'CREATE TABLE future (x)' }]);
    expect(() => migrate(db)).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(new RegExp(`version 99.*only up to ${latestSchemaVersion()}`)),
      }),
    );
  });
});
