// Builds the published form of @dsh-sandbox/client into client/dist (npm pack runs it as
// `prepack`; tests/integration/client/package.test.ts packs, installs and uses the result):
//   node client/build.ts
// - dist/index.js (ESM) and dist/index.cjs (CommonJS): one bundle each of the client with
//   openapi-fetch inside (esbuild, platform neutral: no Node built-in is imported, so bundlers and
//   browsers take it as it is), so the package has no runtime dependencies to install.
// - dist/*.d.ts: the declarations tsc emits from the sources (client/tsconfig.build.json, the
//   client's own strict checks), their `.ts` imports rewritten to `.js`; dist/vendor/ holds the
//   declarations of openapi-fetch and openapi-typescript-helpers (MIT, their licences beside
//   them), which `DshClient.api`'s type needs. Every .d.ts has a .d.cts twin for `require` users.
// Invariant: dist is rebuilt from nothing each time; nothing in it is edited by hand or committed.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, 'dist');
const require = createRequire(import.meta.url);

/** The folder of an installed package (its package.json resolved from here). */
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

/** `text` with relative `.ts` (and vendored package) specifiers pointing at the built files. */
function rewriteSpecifiers(text: string, depth: number): string {
  const vendor = depth === 0 ? './vendor/' : './';
  return text
    .replace(/(['"])(\.\.?\/[^'"]+)\.ts\1/g, '$1$2.js$1')
    .replace(/(['"])openapi-fetch\1/g, `$1${vendor}openapi-fetch.js$1`)
    .replace(/(['"])openapi-typescript-helpers\1/g, `$1${vendor}openapi-typescript-helpers.js$1`);
}

async function bundles(): Promise<void> {
  const shared = {
    entryPoints: [join(HERE, 'index.ts')],
    bundle: true,
    platform: 'neutral' as const,
    target: 'es2022',
    legalComments: 'eof' as const,
    logLevel: 'warning' as const,
  };
  await build({ ...shared, format: 'esm', outfile: join(DIST, 'index.js') });
  await build({ ...shared, format: 'cjs', outfile: join(DIST, 'index.cjs') });
}

function declarations(): void {
  const tsc = join(packageDir('typescript'), 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(HERE, 'tsconfig.build.json')], { stdio: 'inherit' });
  const vendor = join(DIST, 'vendor');
  mkdirSync(vendor, { recursive: true });
  for (const name of ['openapi-fetch', 'openapi-typescript-helpers']) {
    const dir = packageDir(name);
    writeFileSync(join(vendor, `${name}.d.ts`), readFileSync(join(dir, 'dist', 'index.d.mts'), 'utf8'));
    copyFileSync(join(dir, 'LICENSE'), join(vendor, `${name}.LICENSE`));
  }
  for (const [dir, depth] of [
    [DIST, 0],
    [vendor, 1],
  ] as const) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.d.ts'))) {
      const text = rewriteSpecifiers(readFileSync(join(dir, file), 'utf8'), depth);
      writeFileSync(join(dir, file), text);
      // The CommonJS twin: the same declarations, read as CommonJS by `require` users' tsc.
      const cts = text.replace(/(['"])(\.\.?\/[^'"]+)\.js\1/g, '$1$2.cjs$1');
      writeFileSync(join(dir, file.replace(/\.d\.ts$/, '.d.cts')), cts);
    }
  }
}

rmSync(DIST, { recursive: true, force: true });
await bundles();
declarations();
console.log(`built ${DIST}`);
