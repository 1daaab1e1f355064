// What a backup and a restore leave on disk, against a careless or hostile operator's machine (issue
// 34's backup): a backup file is 0600 whatever the umask (it holds key hashes and sealed secrets); a
// restore from a backup that was copied around as 0644 still makes a 0600 store; a backup path that
// is a symlink (to a file, or dangling) is refused, never followed, and nothing is written there.
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { backupLibsql, restoreLibsql } from '../../../host/store/backup.ts';
import { openDatabase } from '../../../host/store/db.ts';
import { migrate } from '../../../host/store/migrations.ts';

const root = mkdtempSync(join(tmpdir(), 'dsh-backup-modes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string): number => statSync(path).mode & 0o777;

const store = (): string => {
  const path = join(root, 'live', 'store.db');
  if (existsSync(path)) return path;
  const db = openDatabase({ path });
  migrate(db);
  db.close();
  return path;
};

it('a backup is 0600 under any umask, and a restore from a 0644 copy of it makes a 0600 store', async () => {
  const file = join(root, 'open-umask.backup');
  const umask = process.umask(0);
  try {
    backupLibsql(store(), file);
  } finally {
    process.umask(umask);
  }
  expect(modeOf(file)).toBe(0o600);
  await chmod(file, 0o644); // copied around by the operator
  const target = join(root, 'fresh', 'store.db');
  restoreLibsql(file, target);
  expect(modeOf(target)).toBe(0o600);
  for (const suffix of ['-wal', '-shm'])
    if (existsSync(`${target}${suffix}`)) expect(modeOf(`${target}${suffix}`)).toBe(0o600);
});

it('a backup path that is a symlink is refused and nothing is written through it', () => {
  const victim = join(root, 'victim.txt');
  writeFileSync(victim, 'untouched');
  const link = join(root, 'to-victim.backup');
  symlinkSync(victim, link);
  expect(() => backupLibsql(store(), link)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  expect(readFileSync(victim, 'utf8')).toBe('untouched');
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
  const dangling = join(root, 'dangling.backup');
  const nowhere = join(root, 'nowhere.db');
  symlinkSync(nowhere, dangling);
  expect(() => backupLibsql(store(), dangling)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  expect(existsSync(nowhere)).toBe(false);
});
