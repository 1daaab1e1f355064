// host/deferred-modules.ts: with its hook installed (as host/cli.ts does before it imports the
// service), dockerode, docker-modem and prom-client load without gRPC, protobufjs, ssh2 and
// OpenTelemetry, and each stand-in gives the real module at its first use. Child Node processes,
// so the hook (process-wide) never touches this test runner's own loading.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DEFERRED } from '../../../host/deferred-modules.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const HOOK = new URL('../../../host/deferred-modules.ts', import.meta.url).href;

/** Runs `body` (an ES module's text, top-level await allowed) in a child Node with the hook installed first. */
const withHook = async (body: string): Promise<unknown> => {
  const source = `
import { createRequire, registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });
(await import(${JSON.stringify(HOOK)})).deferRarelyUsedModules();
const require = createRequire(${JSON.stringify(`${ROOT}package.json`)});
const loadedPackages = () => [...new Set([...loaded].flatMap((u) => /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(u)?.[1] ?? []))].sort();
const out = {};
${body}
process.stdout.write(JSON.stringify(out));`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--no-node-snapshot', '--input-type=module', '-e', source],
    { cwd: ROOT, maxBuffer: 4 * 1024 * 1024 },
  );
  return JSON.parse(stdout);
};

const HEAVY = ['@grpc/grpc-js', '@grpc/proto-loader', '@opentelemetry/api', 'protobufjs', 'ssh2'];

describe('deferred modules', () => {
  it('loads dockerode and prom-client without the packages only rare paths need', async () => {
    const out = await withHook(`
const Docker = require('dockerode');
const prom = require('prom-client');
const registry = new prom.Registry();
prom.collectDefaultMetrics({ register: registry });
out.metrics = await registry.metrics();
out.packages = loadedPackages();
out.client = typeof new Docker({ socketPath: '/nonexistent.sock' }).listContainers;`);
    const { packages, metrics, client } = out as { packages: string[]; metrics: string; client: string };
    expect(packages).toContain('dockerode');
    expect(packages).toContain('prom-client');
    expect(HEAVY.filter((p) => packages.includes(p))).toEqual([]);
    // prom-client's CPU metric still counts (its OpenTelemetry use is for exemplars only).
    expect(metrics).toMatch(/^process_cpu_seconds_total \d/m);
    expect(client).toBe('function');
  }, 60_000);

  it('gives the real module at the first call or property read', async () => {
    const out = await withHook(`
const ssh = require('docker-modem/lib/ssh.js');
out.before = loadedPackages();
// docker-modem's SSH transport: an http.Agent whose connections go over ssh2 (none is opened here).
const agent = ssh({ host: '127.0.0.1', port: 1 });
out.agent = typeof agent.createConnection;
const otel = require('@opentelemetry/api');
out.span = typeof otel.trace.getSpan;
out.keys = Object.keys(otel).includes('trace');
const session = require('dockerode/lib/session.js');
// withSession(docker, auth, handler) dials the engine first; this engine answers the dial with an error.
out.session = await new Promise((resolve) =>
  session({ modem: { dial: (opts, done) => done(new Error(opts.path)) } }, undefined, (error) => resolve(error.message)),
);
out.after = loadedPackages();`);
    const { before, after, agent, span, keys, session } = out as Record<string, unknown>;
    expect((before as string[]).filter((p) => HEAVY.includes(p))).toEqual([]);
    expect(agent).toBe('function');
    expect(span).toBe('function');
    expect(keys).toBe(true);
    expect(session).toBe('/session');
    expect(after).toEqual(expect.arrayContaining(['ssh2', '@opentelemetry/api', '@grpc/grpc-js']));
  }, 60_000);

  it('names files that exist and export what their stand-ins forward to (a dependency update that moves one fails here)', () => {
    const require = createRequire(`${ROOT}package.json`);
    for (const [suffix, shape] of DEFERRED) {
      const path = `${ROOT}${suffix.slice(1)}`;
      expect(existsSync(path), path).toBe(true);
      expect(typeof require(path), path).toBe(shape);
    }
  });
});
