// The SkillStore contract (a tenant's skill catalog, packages kept whole): every backend runs this
// suite through a one-line test file. `open` is async so a network database can make its schema
// first; `tenant` makes a tenant the rows can belong to; `reopen` opens the store again on the
// same database (a restart or another process).
import { describe, expect, it } from 'vitest';
import type { SkillPackage, SkillStore } from '../../../host/store/skills.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface SkillStoreInstance {
  store: SkillStore;
  tenant(name: string): Promise<string>;
  reopen(): Promise<SkillStore>;
  close(): Promise<void> | void;
}

export interface SkillStoreHarness {
  name: string;
  open(options?: { now?: () => number }): Promise<SkillStoreInstance>;
}

const file = (path: string, text: string, mode = 0o644) => ({ path, mode, content: Buffer.from(text) });

/** A package as host/skills/package.ts would make it (the store checks none of it). */
const skill = (name: string, version = 1, extra: { path: string; text: string; mode?: number }[] = []) => {
  const files = [
    file('SKILL.md', `---\nname: ${name}\ndescription: Does ${name} v${version}\n---\nSteps v${version}`),
    ...extra.map((f) => file(f.path, f.text, f.mode)),
  ];
  const pkg: SkillPackage = {
    name,
    description: `Does ${name} v${version}`,
    digest: `${name}-digest-${version}`.padEnd(64, '0'),
    bytes: files.reduce((n, f) => n + f.content.length, 0),
    instructions: `Steps v${version}`,
    files,
  };
  return pkg;
};

export const runSkillStoreContract = (harness: SkillStoreHarness) => {
  describe(`SkillStore contract (${harness.name})`, () => {
    const open = closedAfterEach(
      (options?: { now?: () => number }): Promise<SkillStoreInstance> => harness.open(options),
    );

    it('puts, lists by name, reads with files, loads whole, replaces and deletes a package', async () => {
      let clock = 1000;
      const { store, tenant } = await open({ now: () => clock });
      const a = await tenant('a');
      const debug = skill('debugging', 1, [
        { path: 'scripts/run.sh', text: '#!/bin/sh\necho hi\n', mode: 0o755 },
      ]);
      const put = await store.put(a, debug, 10);
      expect(put.created).toBe(true);
      expect(put.summary).toEqual({
        name: 'debugging',
        description: debug.description,
        digest: debug.digest,
        bytes: debug.bytes,
        createdAt: 1000,
        updatedAt: 1000,
      });
      await store.put(a, skill('alpha'), 10);
      expect((await store.list(a)).map((s) => s.name)).toEqual(['alpha', 'debugging']);
      expect(await store.get(a, 'debugging')).toEqual(put.summary);
      expect(await store.files(a, 'debugging')).toEqual([
        { path: 'SKILL.md', bytes: (debug.files[0] as { content: Buffer }).content.length },
        { path: 'scripts/run.sh', bytes: 18 },
      ]);
      const loaded = await store.load(a, 'debugging');
      expect(loaded).toMatchObject({ name: 'debugging', instructions: 'Steps v1', digest: debug.digest });
      expect(loaded?.files.map((f) => [f.path, f.mode, f.content.toString()])).toEqual([
        ['SKILL.md', 0o644, (debug.files[0] as { content: Buffer }).content.toString()],
        ['scripts/run.sh', 0o755, '#!/bin/sh\necho hi\n'],
      ]);

      clock = 2000;
      const replaced = await store.put(a, skill('debugging', 2), 10);
      expect(replaced.created).toBe(false);
      expect(replaced.summary).toMatchObject({
        description: 'Does debugging v2',
        createdAt: 1000,
        updatedAt: 2000,
      });
      // Replaced whole: the file the new package lacks is gone.
      expect((await store.files(a, 'debugging')).map((f) => f.path)).toEqual(['SKILL.md']);
      expect((await store.load(a, 'debugging'))?.instructions).toBe('Steps v2');

      expect(await store.delete(a, 'debugging')).toBe(true);
      expect(await store.delete(a, 'debugging')).toBe(false);
      expect(await store.get(a, 'debugging')).toBeUndefined();
      expect(await store.load(a, 'debugging')).toBeUndefined();
      expect(await store.files(a, 'debugging')).toEqual([]);
      expect((await store.list(a)).map((s) => s.name)).toEqual(['alpha']);
    });

    it("keeps tenants apart: another tenant's skill is absent, never listed, never deleted", async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      await store.put(a, skill('mine'), 10);
      expect(await store.list(b)).toEqual([]);
      expect(await store.get(b, 'mine')).toBeUndefined();
      expect(await store.load(b, 'mine')).toBeUndefined();
      expect(await store.files(b, 'mine')).toEqual([]);
      expect(await store.delete(b, 'mine')).toBe(false);
      // The same name is a skill of each tenant's own.
      expect((await store.put(b, skill('mine', 2), 10)).created).toBe(true);
      expect((await store.load(a, 'mine'))?.instructions).toBe('Steps v1');
    });

    it('refuses a new skill past the maximum with LIMIT_EXCEEDED, and still replaces one', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      await store.put(a, skill('one'), 2);
      await store.put(a, skill('two'), 2);
      await expect(store.put(a, skill('three'), 2)).rejects.toMatchObject({
        code: 'LIMIT_EXCEEDED',
        data: { limit: 2 },
      });
      expect((await store.list(a)).map((s) => s.name)).toEqual(['one', 'two']);
      expect((await store.put(a, skill('two', 2), 2)).created).toBe(false);
    });

    it('two stores putting new skills at once never pass the maximum together', async () => {
      const opened = await open();
      const a = await opened.tenant('a');
      const other = await opened.reopen();
      for (let limit = 1; limit <= 3; limit++) {
        const made = await Promise.allSettled([
          opened.store.put(a, skill(`first-${limit}`), limit),
          other.put(a, skill(`second-${limit}`), limit),
        ]);
        expect(made.filter((p) => p.status === 'fulfilled')).toHaveLength(1);
        expect(made.find((p) => p.status === 'rejected')).toMatchObject({
          reason: { code: 'LIMIT_EXCEEDED' },
        });
        expect(await other.list(a)).toHaveLength(limit);
      }
    });

    it('keeps the catalog for another store on the same database', async () => {
      const opened = await open();
      const a = await opened.tenant('a');
      await opened.store.put(a, skill('kept', 1, [{ path: 'bin/x', text: 'x', mode: 0o755 }]), 10);
      const again = await opened.reopen();
      expect((await again.list(a)).map((s) => s.name)).toEqual(['kept']);
      expect((await again.load(a, 'kept'))?.files.map((f) => [f.path, f.mode])).toEqual([
        ['SKILL.md', 0o644],
        ['bin/x', 0o755],
      ]);
    });
  });
};
