// sandboxd's bundle is kept between starts under a key of its sources (scripts/setup/sandboxd-bundle.ts),
// so a warm `npm start` computes the image tag without esbuild. The tag must change exactly when a
// build would: any change to a file the build may read is a new key, and a kept bundle is the very
// bundle a build makes.
import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { bundleSandboxd, sandboxdBundle, sandboxdKey } from '../../../scripts/setup/sandboxd-bundle.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'dsh-sandboxd-key-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of what the build reads, in a folder of its own. */
const copyOfSources = (name: string): string => {
  const root = join(tmp, name);
  for (const path of ['sandbox-image', 'sandbox-wire', 'tsconfig.json', 'package.json'])
    cpSync(join(REPO, path), join(root, path), { recursive: true });
  return root;
};

it('the key is the same for the same sources anywhere, and changes with any file the build may read', () => {
  const key = sandboxdKey();
  const root = copyOfSources('a');
  expect(sandboxdKey(root)).toBe(key);
  appendFileSync(join(root, 'sandbox-wire', 'paths.ts'), '\n');
  const edited = sandboxdKey(root);
  expect(edited).not.toBe(key);
  writeFileSync(join(root, 'sandbox-image', 'sandboxd', 'new-module.ts'), 'export {};\n');
  const added = sandboxdKey(root);
  expect(added).not.toBe(edited);
  rmSync(join(root, 'sandbox-image', 'sandboxd', 'new-module.ts'));
  expect(sandboxdKey(root)).toBe(edited);
  writeFileSync(join(root, 'tsconfig.json'), '{}\n');
  expect(sandboxdKey(root)).not.toBe(edited);
});

it('a kept bundle is the bundle a build makes, and is what the next call returns', async () => {
  const dir = join(tmp, 'kept');
  const built = await bundleSandboxd();
  expect((await sandboxdBundle(dir)).equals(built)).toBe(true);
  // Kept: the next call reads it (a changed file under the key would show here).
  writeFileSync(join(dir, `${sandboxdKey()}.cjs`), 'kept');
  expect((await sandboxdBundle(dir)).toString()).toBe('kept');
}, 60_000);
