// A real control plane for the adversarial suite: HTTP on 127.0.0.1, the real Docker engine (every
// container labelled with this file's run id and swept by that label), the real isolate host, a
// libsql file store, and two tenants. Everything a test does goes through the public HTTP API,
// like a hostile tenant would; `docker` is only used to look from the outside.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { extract, pack } from 'tar-stream';
import { type Config, loadConfig } from '../../../host/config.ts';
import type { DockerProviderOptions } from '../../../host/sandbox/docker/provider.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { dockerFixture, type Fixture } from '../sandbox/fixtures.ts';
import { checkBackend, storeDatabase } from '../store-mode.ts';

export type { Loose };

export interface HttpResult {
  status: number;
  json: Loose;
  text: string;
  buf: Uint8Array;
  headers: Headers;
}

export interface Harness {
  server: Running;
  fixture: Fixture;
  dataDir: string;
  keyA: string;
  keyB: string;
  /** Every line the server logged through its `log` option. */
  logs: string[];
  http(
    key: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<HttpResult>;
  agent(key: string, body?: Record<string, unknown>): Promise<string>;
  calls(key: string, agentId: string, list: [string, string, Record<string, unknown>][]): Promise<Loose[]>;
  bash(key: string, agentId: string, command: string, timeoutMs?: number): Promise<Loose>;
  close(): Promise<void>;
}

/** The key of GET /metrics on every harness's server. */
export const METRICS_KEY = 'metrics-key-for-tests-0123456789';

export const text = (r: Loose): string => (r.content ?? []).map((p: Loose) => p.text ?? '').join('');

export const startHarness = async (
  options: {
    isolateWorkers?: number;
    maxUploadBytes?: number;
    config?: Partial<Config>;
    /** Options of the docker provider over the fixture's (e.g. a warm pool). */
    provider?: Partial<DockerProviderOptions>;
    /** Serve the sandboxes' egress proxy, as `serve` does. Default off: sandboxd answers 503. */
    egress?: boolean;
    /** The Docker engine. Default the main one (tests/helpers/gvisor-engine.ts: a private one). */
    docker?: Docker;
  } = {},
): Promise<Harness> => {
  const fixture = dockerFixture(undefined, options.docker);
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-sec-'));
  const database = await storeDatabase();
  const logs: string[] = [];
  const config = loadConfig(
    {
      host: '127.0.0.1',
      port: 0,
      dataDir,
      poolSize: 0,
      isolateWorkers: options.isolateWorkers ?? 1,
      shutdownGraceMs: 1000,
      metricsKey: METRICS_KEY,
      ...(options.maxUploadBytes === undefined ? {} : { maxUploadBytes: options.maxUploadBytes }),
      ...(database === undefined ? {} : { database: database.url }),
      ...options.config,
    },
    {},
  );
  const server = await startServer(config, {
    sandboxes: options.egress
      ? (egress) => fixture.provider({ egress, ...options.provider })
      : fixture.provider(options.provider),
    log: (line) => logs.push(line),
  });
  checkBackend(database, server.store);
  const keyA = (await server.store.tenants.createTenant('tenant-a')).apiKey;
  const keyB = (await server.store.tenants.createTenant('tenant-b')).apiKey;

  const http: Harness['http'] = async (key, method, path, body, headers = {}) => {
    const init: RequestInit = {
      method,
      headers: { ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }), ...headers },
    };
    if (body !== undefined) {
      if (body instanceof Uint8Array || typeof body === 'string') init.body = body as never;
      else {
        init.body = JSON.stringify(body);
        (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
      }
    }
    const res = await fetch(`${server.url}${path}`, init);
    const buf = new Uint8Array(await res.arrayBuffer());
    const txt = new TextDecoder().decode(buf);
    let json: Loose;
    try {
      json = JSON.parse(txt);
    } catch {}
    return { status: res.status, json, text: txt, buf, headers: res.headers };
  };

  const harness: Harness = {
    server,
    fixture,
    dataDir,
    keyA,
    keyB,
    logs,
    http,
    async agent(key, body = {}) {
      const res = await http(key, 'POST', '/v1/agents', body);
      if (res.status !== 201) throw new Error(`create agent: ${res.status} ${res.text}`);
      return res.json.id as string;
    },
    async calls(key, agentId, list) {
      const res = await http(key, 'POST', `/v1/agents/${agentId}/calls`, {
        calls: list.map(([id, name, args]) => ({ id, name, arguments: args })),
      });
      if (res.status !== 200) throw new Error(`calls: ${res.status} ${res.text}`);
      return res.json.results as Loose[];
    },
    async bash(key, agentId, command, timeoutMs) {
      const [r] = await harness.calls(key, agentId, [
        ['sh', 'bash', { command, description: 'probe', ...(timeoutMs ? { timeoutMs } : {}) }],
      ]);
      return r;
    },
    async close() {
      await server.close();
      await fixture.sweep();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return harness;
};

/** A fresh tenant made through the admin route: its id and key (quotas and revocations of its own). */
export const adminTenant = async (
  h: Harness,
  adminKey: string,
  name: string,
): Promise<{ id: string; key: string }> => {
  const res = await h.http(adminKey, 'POST', '/v1/tenants', { name });
  if (res.status !== 201) throw new Error(`create tenant: ${res.status} ${res.text}`);
  return { id: res.json.id, key: res.json.apiKey };
};

/** An uncompressed tar from raw tar-stream headers (anything tar-stream can express). */
export const tarOf = async (
  entries: { header: Record<string, unknown>; body?: string | Buffer }[],
): Promise<Uint8Array> => {
  const p = pack();
  for (const e of entries) {
    await new Promise<void>((resolve, reject) => {
      const cb = (err?: Error | null) => (err ? reject(err) : resolve());
      if (e.body === undefined) p.entry(e.header as never, cb);
      else p.entry(e.header as never, e.body, cb);
    });
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
};

/** Entry names and types of a tar. */
export const tarEntries = async (
  buf: Uint8Array,
): Promise<{ name: string; type: string; linkname?: string; size: number }[]> => {
  const out: { name: string; type: string; linkname?: string; size: number }[] = [];
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  ex.on('entry', (h, stream, next) => {
    out.push({
      name: h.name,
      type: h.type ?? 'file',
      size: h.size ?? 0,
      ...(h.linkname ? { linkname: h.linkname } : {}),
    });
    stream.on('end', next);
    stream.resume();
  });
  ex.end(Buffer.from(buf));
  await done;
  return out;
};
