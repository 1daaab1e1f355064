// `serve`: opens the store, makes the default tenant on first start, and runs the HTTP API on
// loopback until SIGINT/SIGTERM, then shuts down gracefully.

import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ServerType, serve as listen } from '@hono/node-server';
import { createApp } from './api/app.ts';
import type { Config } from './config.ts';
import { openStore } from './store/index.ts';

const VERSION = '0.1.0';
export const DEFAULT_KEY_FILE = 'default-tenant.key';

export const serve = async (config: Config): Promise<void> => {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = openStore({ dataDir: config.dataDir });
  if (store.tenants.listTenants().length === 0) {
    const tenant = store.tenants.createTenant('default');
    const keyFile = join(config.dataDir, DEFAULT_KEY_FILE);
    writeFileSync(keyFile, `${tenant.apiKey}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    process.stdout.write(`created the default tenant ${tenant.id}; its API key (shown once, kept in ${keyFile}):\n  ${tenant.apiKey}\n`);
  } else if (existsSync(join(config.dataDir, DEFAULT_KEY_FILE))) {
    process.stdout.write(`default tenant key: ${join(config.dataDir, DEFAULT_KEY_FILE)}\n`);
  }
  const app = createApp({ startedAt: Date.now(), version: VERSION });
  const server: ServerType = await new Promise((resolve) => {
    const s = listen({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
      process.stdout.write(`dsh-sandbox listening on http://${info.address}:${info.port}\n`);
      resolve(s);
    });
  });
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      server.close(() => resolve());
      const idle = setInterval(() => (server as import('node:http').Server).closeIdleConnections?.(), 50);
      setTimeout(() => (server as import('node:http').Server).closeAllConnections?.(), 5000).unref();
      idle.unref();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  store.close();
};
