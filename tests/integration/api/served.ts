// The composition `serve` runs, in-process, for API integration tests: real Docker sandboxes of
// this file's fixture (swept by label afterwards), a data directory of its own, no warm pool and one
// isolate worker. start() may be called again after stop() to restart the control plane on the same
// data directory, as an operator would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { type Config, loadConfig } from '../../../host/config.ts';
import { type Running, startServer } from '../../../host/serve.ts';
import type { TestDatabase } from '../../helpers/postgres.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { dockerFixture, type Fixture } from '../sandbox/fixtures.ts';
import { checkBackend, storeDatabase } from '../store-mode.ts';

export interface Served {
  fixture: Fixture;
  config: Config;
  start(): Promise<Running>;
  /** The control plane running now, started when none is. */
  current(): Promise<Running>;
  /** Shuts one control plane down gracefully (its containers keep running). */
  stop(server: Running): Promise<void>;
}

export function served(name: string, overrides: Partial<Config> = {}): Served {
  const fixture = dockerFixture();
  const dataDir = mkdtempSync(join(tmpdir(), `dsh-api-${name}-`));
  const config = loadConfig(
    { host: '127.0.0.1', port: 0, dataDir, poolSize: 0, isolateWorkers: 1, ...overrides },
    {},
  );
  const running: Running[] = [];
  // On PostgreSQL (../store-mode.ts) every start and restart uses the same fresh database.
  let database: Promise<TestDatabase | undefined> | undefined;
  afterAll(async () => {
    for (const r of running) await r.close();
    await fixture.sweep();
    await (await database)?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  async function start(): Promise<Running> {
    database ??= storeDatabase();
    const url = (await database)?.url;
    if (url !== undefined) config.database = url;
    const server = await startServer(config, {
      sandboxes: (egress) => fixture.provider({ egress }),
      log: () => {},
    });
    checkBackend(await database, server.store);
    running.push(server);
    return server;
  }
  return {
    fixture,
    config,
    start,
    current: async () => running[0] ?? (await start()),
    async stop(server) {
      await server.close();
      running.splice(running.indexOf(server), 1);
    },
  };
}

/** One JSON request with the tenant's key; the body parsed, or undefined when it is not JSON. */
export async function json(
  server: Running,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Loose }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json().catch(() => undefined)) as Loose };
}
