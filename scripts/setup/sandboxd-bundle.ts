// sandboxd's bundle (one CommonJS file for the image's Node 22), an input of the sandbox image and of
// its tag (image.ts). Building it with esbuild takes a few hundred ms of CPU and starts esbuild's
// service process, on every `npm start`, only to find the tag unchanged; so the bundle is kept in
// the data directory (sandboxd-bundle/) under a key that hashes everything the build reads: every file under
// SANDBOXD_SOURCES (paths and contents: the bundle may only import from there), the checkout's
// tsconfig.json and package.json, esbuild's version and the build options. A change to any of them
// is a new key, so a new build: the tag changes exactly as it does without the cache. The bundle
// does not depend on the checkout's path (esbuild names inputs relative to it), so checkouts that
// share a data directory share the bundles.
// Invariants: an entry is written whole (a temporary file renamed) and only after the build passed
// the sources check; a missing or unreadable entry is built again.

import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { loadConfig } from '../../host/config.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The folders sandboxd's bundle may be built from: its own, and the wire it shares with the host. */
export const SANDBOXD_SOURCES = ['sandbox-image/', 'sandbox-wire/'] as const;

/** esbuild's options for the bundle, besides the entry and the working directory. */
const BUILD_OPTIONS = {
  metafile: true,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  write: false,
  minify: false,
  legalComments: 'none',
  logLevel: 'silent',
} as const;

/** Bundles kept beyond the newest: older ones are removed when a new one is written. */
const KEEP = 4;

/** Bundles sandboxd for the image's sandboxd runtime (Node 22) into one CommonJS file; refuses any other source. */
export const bundleSandboxd = async (): Promise<Buffer> => {
  const entry = join(ROOT, 'sandbox-image', 'sandboxd', 'main.ts');
  if (!existsSync(entry)) throw new Error(`sandboxd entry ${entry} is missing`);
  // Loaded here, not with the module: a warm start never builds.
  const { build } = await import('esbuild');
  const result = await build({ entryPoints: [entry], absWorkingDir: ROOT, ...BUILD_OPTIONS });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no sandboxd bundle');
  const strays = Object.keys(result.metafile.inputs).filter(
    (input) => !SANDBOXD_SOURCES.some((dir) => input.startsWith(dir)),
  );
  if (strays.length > 0)
    throw new Error(
      `sandboxd may only be built from ${SANDBOXD_SOURCES.join(' and ')}, but it imports ${strays.join(', ')}`,
    );
  return Buffer.from(file.contents);
};

/** Every file under `dir` (relative to `root`, `/`-separated), sorted. */
const filesUnder = (root: string, dir: string): string[] =>
  readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)).split('\\').join('/'))
    .sort();

/** The key of the bundle the sources under `root` make: a hash of everything the build reads. */
export const sandboxdKey = (root = ROOT): string => {
  const esbuild = createRequire(import.meta.url)('esbuild/package.json') as { version: string };
  const hash = createHash('sha256').update(
    `sandboxd-bundle v1\0esbuild ${esbuild.version}\0${JSON.stringify(BUILD_OPTIONS)}\0`,
  );
  const files = [
    ...SANDBOXD_SOURCES.flatMap((dir) => filesUnder(root, dir)),
    'tsconfig.json',
    'package.json',
  ];
  for (const file of files) {
    const path = join(root, file);
    hash.update(`${file}\0`);
    hash.update(existsSync(path) ? readFileSync(path) : '(none)');
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 24);
};

/** Writes a bundle under its key (whole or not at all) and removes all but the newest KEEP. */
const keep = (dir: string, key: string, bundle: Buffer): void => {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${key}.${process.pid}.tmp`);
  writeFileSync(tmp, bundle);
  renameSync(tmp, join(dir, `${key}.cjs`));
  const kept = readdirSync(dir)
    .filter((name) => name.endsWith('.cjs'))
    .map((name) => ({ name, mtime: statSync(join(dir, name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of kept.slice(KEEP)) rmSync(join(dir, old.name), { force: true });
};

/** The data directory's sandboxd-bundle/, or none when the configuration is invalid (the service says why). */
const defaultDir = (): string | undefined => {
  try {
    return join(loadConfig().dataDir, 'sandboxd-bundle');
  } catch {
    return undefined;
  }
};

/**
 * sandboxd's bundle: the kept one when the sources are those it was built from, else built (and
 * kept). `dir` defaults to the data directory's sandboxd-bundle/.
 */
export const sandboxdBundle = async (dir = defaultDir()): Promise<Buffer> => {
  if (dir === undefined) return bundleSandboxd();
  const key = sandboxdKey();
  try {
    return readFileSync(join(dir, `${key}.cjs`));
  } catch {
    // not built yet from these sources
  }
  const bundle = await bundleSandboxd();
  try {
    keep(dir, key, bundle);
  } catch {
    // a data directory it cannot write to: the next start builds it again
  }
  return bundle;
};
