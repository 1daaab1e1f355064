// The walls docs/architecture.md keeps, pinned: the control plane (host/) never imports scripts/ (setup
// may import host, never the reverse, so there is no cycle and one place builds the image); only
// host/config.ts reads the environment (everything else gets its settings from a Config); the
// store sits below every room (it implements ports and imports nothing above it), and the host
// requests room sits below its askers (tools, agents, api) and above nothing but the shared vocabulary.
// The sandbox image's code (sandbox-image/) imports only itself, the wire it shares with the host
// (sandbox-wire/) and node: builtins, and sandbox-wire/ imports only itself and node: builtins, so
// nothing of the control plane (its error table included) is built into the image or its tag.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const HOST = join(REPO, 'host/');

const hostFiles = (): { file: string; source: string }[] =>
  readdirSync(HOST, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => ({ file, source: readFileSync(`${HOST}${file}`, 'utf8') }));

/** Every module specifier in a source: static imports and re-exports, side-effect, dynamic and require. */
const specifiersOf = (source: string): string[] =>
  [
    ...source.matchAll(/\bfrom\s+'([^']+)'/g),
    ...source.matchAll(/\bimport\s+'([^']+)'/g),
    ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
    ...source.matchAll(/\brequire\(\s*'([^']+)'\s*\)/g),
  ].map((m) => m[1] ?? '');

/**
 * What the code files under `folder` import that lies outside `allowed` (folders relative to the
 * repository) and is not a node: builtin, as "file imports specifier" lines.
 */
const strayImports = (folder: string, allowed: string[]): string[] => {
  const files = readdirSync(join(REPO, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.[cm]?[jt]s$/.test(file))
    .map((file) => join(folder, file));
  expect(files.length, folder).toBeGreaterThan(3);
  const strays: string[] = [];
  for (const file of files) {
    for (const specifier of specifiersOf(readFileSync(join(REPO, file), 'utf8'))) {
      if (specifier.startsWith('node:')) continue;
      const target = specifier.startsWith('.')
        ? relative(REPO, join(REPO, dirname(file), specifier))
            .split(sep)
            .join('/')
        : specifier; // a package: never allowed
      if (!allowed.some((dir) => target.startsWith(`${dir}/`))) strays.push(`${file} imports ${specifier}`);
    }
  }
  return strays;
};

describe('the walls of the sandbox image', () => {
  it('sandbox-image/ imports only itself, sandbox-wire/ and node: builtins', () => {
    expect(strayImports('sandbox-image', ['sandbox-image', 'sandbox-wire'])).toEqual([]);
  });

  it('sandbox-wire/ imports only itself and node: builtins (nothing of host/ or sandbox-image/)', () => {
    expect(strayImports('sandbox-wire', ['sandbox-wire'])).toEqual([]);
  });
});

/** Pins that the files under host/<folder>/ import only their own folder, `allowed` and packages. */
const expectOnly = (folder: string, allowed: { host: string[]; packages: RegExp }) => {
  const files = hostFiles().filter(({ file }) => file.startsWith(`${folder}/`));
  expect(files.length).toBeGreaterThan(2);
  for (const { file, source } of files) {
    const depth = file.split('/').length - 2; // folders below host/<folder>/
    const up = `../${'../'.repeat(depth)}`;
    for (const specifier of specifiersOf(source)) {
      const relative = specifier.startsWith('.');
      const ok = relative
        ? !specifier.startsWith(up) || allowed.host.includes(specifier.slice(up.length))
        : allowed.packages.test(specifier);
      expect(ok, `host/${file} imports ${specifier}`).toBe(true);
    }
  }
};

describe('the walls of host/', () => {
  it('never imports scripts/ (statically or dynamically)', () => {
    const files = hostFiles();
    expect(files.length).toBeGreaterThan(50);
    for (const { file, source } of files) {
      for (const specifier of specifiersOf(source))
        expect(specifier, `host/${file} imports ${specifier}`).not.toMatch(/(^|\/)scripts\//);
    }
  });

  it('host/store imports nothing above it: itself, the shared vocabulary and the ports it implements', () => {
    expectOnly('store', {
      host: ['errors.ts', 'json.ts', 'requests/port.ts'],
      packages: /^(node:|nanoid$|libsql$|pg$)/,
    });
  });

  it('host/requests imports only itself, the shared vocabulary and valibot (never the store or its askers)', () => {
    expectOnly('requests', { host: ['errors.ts', 'json.ts'], packages: /^valibot$/ });
  });

  it('host/console reaches the service only through the public API (hono, no room of host/)', () => {
    expectOnly('console', { host: [], packages: /^(node:|hono($|\/))/ });
  });

  it('reads the environment only in host/config.ts', () => {
    for (const { file, source } of hostFiles()) {
      if (file === 'config.ts') continue;
      expect(/\bprocess\.env\b/.test(source), `host/${file} reads process.env`).toBe(false);
    }
  });
});

/** Every code file of the runtime folders, with the files of this repository it imports. */
const graph = (): Map<string, string[]> => {
  const edges = new Map<string, string[]>();
  for (const folder of ['host', 'sandbox-image', 'sandbox-wire', 'policies', 'sdk-gen', 'client']) {
    for (const name of readdirSync(join(REPO, folder), { recursive: true, encoding: 'utf8' })) {
      if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue;
      const file = join(folder, name).split(sep).join('/');
      const targets = specifiersOf(readFileSync(join(REPO, file), 'utf8'))
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) =>
          relative(REPO, join(REPO, dirname(file), specifier))
            .split(sep)
            .join('/'),
        );
      edges.set(file, targets);
    }
  }
  return edges;
};

describe('no import circles', () => {
  it('no file imports itself back through others, type imports included (a circle is closed by moving a type)', () => {
    const edges = graph();
    expect(edges.size).toBeGreaterThan(300);
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      path.push(file);
      for (const next of edges.get(file) ?? []) {
        if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next].join(' -> '));
        else if (!state.has(next) && edges.has(next)) visit(next);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of edges.keys()) if (!state.has(file)) visit(file);
    expect(circles).toEqual([]);
  });
});

describe('the rooms around the agent service', () => {
  /** The room of a runtime file: host/<its first folder> (or the file, at host/'s root). */
  const roomOf = (file: string): string => file.split('/').slice(0, 2).join('/').replace(/\.ts$/, '');
  /** The rooms whose files import files of `room`, the room itself left out, sorted. */
  const importersOf = (edges: Map<string, string[]>, room: string): string[] => {
    const rooms = new Set<string>();
    for (const [file, targets] of edges)
      if (roomOf(file) !== room && targets.some((target) => roomOf(target) === room)) rooms.add(roomOf(file));
    return [...rooms].sort();
  };

  it('teams, cordis, MCP servers, session and schedules are rooms the agent service wires', () => {
    const edges = graph();
    expect(importersOf(edges, 'host/teams')).toEqual(['host/agents']);
    expect(importersOf(edges, 'host/cordis')).toEqual(['host/agents']);
    expect(importersOf(edges, 'host/schedules')).toEqual(['host/agents']);
    expect(importersOf(edges, 'host/session')).toEqual(['host/agents', 'host/teams']);
    // The API validates a server's spec with the room's own type.
    expect(importersOf(edges, 'host/mcp-servers')).toEqual(['host/agents', 'host/api']);
  });

  it('none of them reaches above the agent service, and session and schedules sit below it', () => {
    const edges = graph();
    for (const room of ['teams', 'cordis', 'mcp-servers', 'session', 'schedules']) {
      const reached = new Set(
        [...edges]
          .filter(([file]) => roomOf(file) === `host/${room}`)
          .flatMap(([, targets]) => targets.map(roomOf)),
      );
      for (const above of ['host/api', 'host/console', 'host/serve', 'host/cli'])
        expect(reached.has(above), `host/${room} imports ${above}`).toBe(false);
      if (room === 'session' || room === 'schedules')
        expect(reached.has('host/agents'), `host/${room} imports host/agents`).toBe(false);
    }
  });
});

describe('the service process and isolated-vm', () => {
  // The service runs with Node's startup snapshot (scripts/main.ts), which isolated-vm cannot run
  // under: only the isolate and plugin workers load it, processes of their own forked with
  // --no-node-snapshot (host/isolates/fork.ts). So nothing the service process imports, from
  // host/cli.ts on, statically or dynamically, may import isolated-vm (type imports aside: erased).
  const runtimeSpecifiers = (source: string): string[] =>
    specifiersOf(
      source.replace(/^\s*import\s+type\b[^;]*;/gm, '').replace(/^\s*export\s+type\b[^;]*;/gm, ''),
    );

  it('nothing reachable from host/cli.ts imports isolated-vm', () => {
    const reached = new Set<string>();
    const visit = (file: string): void => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const specifier of runtimeSpecifiers(readFileSync(join(REPO, file), 'utf8')))
        if (specifier.startsWith('.'))
          visit(
            relative(REPO, join(REPO, dirname(file), specifier))
              .split(sep)
              .join('/'),
          );
    };
    visit('host/cli.ts');
    expect(reached.size).toBeGreaterThan(300);
    const loaders = [...reached].filter((file) =>
      runtimeSpecifiers(readFileSync(join(REPO, file), 'utf8')).includes('isolated-vm'),
    );
    expect(loaders).toEqual([]);
    // The workers themselves do load it (the wall above is about the service alone).
    expect(reached.has('host/isolates/worker.ts')).toBe(false);
  });
});
