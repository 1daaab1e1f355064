// The console's static assets: its own stylesheet and scripts (host/console/assets/) and xterm.js
// with its stylesheet from node_modules (@xterm/xterm), read once and served from memory by name.
// Only these names answer; nothing else on disk is reachable through this route, and only
// PUBLIC_ASSETS without a session.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Asset {
  type: string;
  body: Uint8Array;
}

const OWN = join(dirname(fileURLToPath(import.meta.url)), 'assets');
const XTERM = dirname(dirname(createRequire(import.meta.url).resolve('@xterm/xterm')));

const FILES: Record<string, [string, string]> = {
  'console.css': [join(OWN, 'console.css'), 'text/css; charset=utf-8'],
  'timeline.js': [join(OWN, 'timeline.js'), 'text/javascript; charset=utf-8'],
  'terminal.js': [join(OWN, 'terminal.js'), 'text/javascript; charset=utf-8'],
  'xterm.mjs': [join(XTERM, 'lib', 'xterm.mjs'), 'text/javascript; charset=utf-8'],
  'xterm.css': [join(XTERM, 'css', 'xterm.css'), 'text/css; charset=utf-8'],
  'xterm-csp.js': [join(OWN, 'xterm-csp.js'), 'text/javascript; charset=utf-8'],
  'refresh.js': [join(OWN, 'refresh.js'), 'text/javascript; charset=utf-8'],
};

/** Assets served without a session: the sign-in page's stylesheet. */
export const PUBLIC_ASSETS: ReadonlySet<string> = new Set(['console.css']);

let loaded: Map<string, Asset> | undefined;

/** The asset of this name, or undefined. Files are read on first use and kept. */
export const assetOf = (name: string): Asset | undefined => {
  loaded ??= new Map(
    Object.entries(FILES).map(([n, [path, type]]) => [n, { type, body: new Uint8Array(readFileSync(path)) }]),
  );
  return loaded.get(name);
};
