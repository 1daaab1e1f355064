// The reference MCP server of the sandbox image: @modelcontextprotocol/server-everything, the
// official servers' test server, installed at image build time with `npm ci` from the lockfile in
// sandbox-image/mcp-everything/ (so the versions of all its packages are pinned, and the image tag,
// which hashes that lockfile, changes only when it does). The install is cached under .tools/ per
// lockfile; nothing is downloaded when the image is already built, and nothing ever at run time
// (the sandbox has no network). A build that needs it and cannot reach the npm registry fails
// with a message saying so, rather than building an image without it.
// In the image: /opt/mcp/everything, run as `mcp-server-everything` (stdio by default).

import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import type { Pack } from 'tar-stream';
import { log, run } from './exec.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SOURCE = join(ROOT, 'sandbox-image', 'mcp-everything');
/** Where the tree goes in the build context (and, by Dockerfile.sandbox, under /opt/mcp/everything). */
export const CONTEXT_DIR = 'mcp-everything';

/** The lockfile that pins the reference server and everything it needs (an image input). */
export const referenceLock = (): Buffer => readFileSync(join(SOURCE, 'package-lock.json'));

/** The installed tree (a folder with package.json and node_modules), installing it once per lockfile. */
export const installReferenceServer = async (): Promise<string> => {
  const lock = referenceLock();
  const key = createHash('sha256').update(lock).digest('hex').slice(0, 12);
  const dir = join(ROOT, '.tools', `mcp-everything-${key}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  copyFileSync(join(SOURCE, 'package.json'), join(tmp, 'package.json'));
  writeFileSync(join(tmp, 'package-lock.json'), lock);
  log(
    'installing the reference MCP server (@modelcontextprotocol/server-everything) for the sandbox image ...',
  );
  const result = await run(
    'npm',
    ['ci', '--prefix', tmp, '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
    { timeoutMs: 300_000 },
  );
  if (result.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(
      'the sandbox image includes the reference MCP server @modelcontextprotocol/server-everything, ' +
        'installed from the npm registry at build time (pinned by sandbox-image/mcp-everything/package-lock.json), ' +
        `and \`npm ci\` failed: ${(result.stderr || result.stdout).trim().slice(-800)}\n` +
        "Make the npm registry reachable (or those packages present in npm's cache) and run setup again.",
    );
  }
  writeFileSync(join(tmp, '.complete'), '');
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
};

/** Adds `dir` to the build context under CONTEXT_DIR: directories and regular files only. */
export const packTree = (pack: Pack, dir: string): void => {
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const full = join(at, entry.name);
      const name = `${CONTEXT_DIR}/${relative(dir, full)}`;
      if (entry.isDirectory()) {
        pack.entry({ name, type: 'directory', mode: 0o755 });
        walk(full);
      } else if (entry.isFile() && entry.name !== '.complete') {
        pack.entry({ name, mode: 0o644 }, readFileSync(full));
      } // symlinks (node_modules/.bin) are left out: the image has its own launcher
    }
  };
  pack.entry({ name: CONTEXT_DIR, type: 'directory', mode: 0o755 });
  walk(dir);
};
