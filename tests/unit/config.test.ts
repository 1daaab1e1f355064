import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type Config, loadConfig, portFrom, unknownSettings } from '../../host/config.ts';
import { SandboxError } from '../../host/errors.ts';
import { SETTINGS } from '../../host/settings.ts';
import { settingsMarkdown } from '../../host/settings-text.ts';
import { codeOf } from '../contract/sandbox/suite.ts';

describe('configuration from the environment', () => {
  it('has safe defaults: loopback, a disk limit on every workspace, data under ./.data', () => {
    const c = loadConfig({}, {}, '/srv/app');
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 7070,
      dataDir: '/srv/app/.data',
      database: '/srv/app/.data/store.db',
      diskQuota: true,
      workspacesDir: '/srv/app/.data/workspaces',
      workspaceMb: 1024,
      workspaceSpares: 2,
      spoolDir: '/srv/app/.data/spool',
      diskOvercommit: 1,
      diskReserveMb: 1024,
    });
  });

  it('keeps a share of the connections for clients with a key, and short timeouts for the rest', () => {
    expect(loadConfig({}, {}, '/srv')).toMatchObject({
      maxConnections: 1024,
      connectionReserve: 64,
      tenantConnections: 128,
      tenantTerminals: 32,
      schedulesPerAgent: 32,
      scheduleMinSeconds: 60,
      firstByteTimeoutMs: 5000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5000,
    });
    // A small cap keeps most of itself for everybody.
    expect(loadConfig({}, { DSH_MAX_CONNECTIONS: '40' }, '/srv').connectionReserve).toBe(10);
  });

  it('reads the workspace settings, explicit options winning over the environment', () => {
    const env = {
      DSH_DISK_QUOTA: 'off',
      DSH_WORKSPACES_DIR: 'ws',
      DSH_WORKSPACE_MB: '256',
      DSH_WORKSPACE_SPARES: '0',
    };
    expect(loadConfig({}, env, '/srv')).toMatchObject({
      diskQuota: false,
      workspacesDir: '/srv/ws',
      workspaceMb: 256,
      workspaceSpares: 0,
    });
    expect(loadConfig({ diskQuota: true, workspaceMb: 64 }, env, '/srv')).toMatchObject({
      diskQuota: true,
      workspaceMb: 64,
    });
  });

  it('sizes isolate workers by memory: 1024 MB unless told', () => {
    expect(loadConfig({}, {}, '/srv').isolateWorkerMb).toBe(1024);
    expect(loadConfig({}, { DSH_ISOLATE_WORKER_MB: '4096' }, '/srv').isolateWorkerMb).toBe(4096);
  });

  it("reads code mode's budgets: defaults within their maxima", async () => {
    expect(loadConfig({}, {}, '/srv')).toMatchObject({
      codeCpuMs: 10_000,
      codeWallMs: 600_000,
      codeCpuMaxMs: 60_000,
      codeWallMaxMs: 3_600_000,
    });
    const env = { DSH_CODE_WALL_MAX_MS: '120000', DSH_CODE_CPU_MS: '500' };
    expect(loadConfig({}, env, '/srv')).toMatchObject({ codeCpuMs: 500, codeWallMs: 120_000 });
    const over = (async () =>
      loadConfig({}, { DSH_CODE_WALL_MAX_MS: '1000', DSH_CODE_WALL_MS: '5000' }, '/srv'))();
    expect(await codeOf(over)).toBe('CONFIG_INVALID');
  });

  it('takes an admin key of 24 characters or more', () => {
    const key = 'k'.repeat(24);
    expect(loadConfig({}, { DSH_ADMIN_KEY: key }, '/srv').adminKey).toBe(key);
    expect(loadConfig({}, {}, '/srv').adminKey).toBeUndefined();
  });

  it('reads the metrics key, the key-failure throttle and the trusted proxies', () => {
    expect(loadConfig({}, {}, '/srv')).toMatchObject({
      metricsKey: undefined,
      authFailures: 10,
      authFailureWindowMs: 60_000,
      trustedProxies: [],
    });
    const env = {
      DSH_METRICS_KEY: 'm'.repeat(24),
      DSH_AUTH_FAILURES: '3',
      DSH_AUTH_FAILURE_WINDOW_MS: '5000',
      DSH_TRUSTED_PROXIES: ' 10.0.0.1, 192.168.0.0/16 ,fd00::/8',
    };
    expect(loadConfig({}, env, '/srv')).toMatchObject({
      metricsKey: 'm'.repeat(24),
      authFailures: 3,
      authFailureWindowMs: 5000,
      trustedProxies: ['10.0.0.1', '192.168.0.0/16', 'fd00::/8'],
    });
  });

  it('refuses bad values at start with CONFIG_INVALID', async () => {
    for (const env of [
      { DSH_DISK_QUOTA: 'maybe' },
      { DSH_DISK_OVERCOMMIT: '0' },
      { DSH_WORKSPACE_MB: '8' },
      { DSH_PORT: '70000' },
      { DSH_POOL_SIZE: 'two' },
      { DSH_MAX_CONNECTIONS: '100', DSH_CONNECTION_RESERVE: '100' },
      { DSH_HEADERS_TIMEOUT_MS: '0' },
      { DSH_ISOLATE_WORKER_MB: '64' },
      // An admin key short enough to guess (it opens every tenant).
      { DSH_ADMIN_KEY: 'admin' },
      { DSH_METRICS_KEY: 'metrics' },
      { DSH_AUTH_FAILURES: '0' },
      { DSH_TRUSTED_PROXIES: '10.0.0.1,proxy.example' },
      { DSH_TRUSTED_PROXIES: '10.0.0.0/33' },
    ]) {
      expect(await codeOf((async () => loadConfig({}, env, '/srv'))()), JSON.stringify(env)).toBe(
        'CONFIG_INVALID',
      );
    }
  });
});

describe('settings the service does not know, and the CLI port', () => {
  const documented = (): string[] => {
    const readme = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    return [...new Set([...readme.matchAll(/`(DSH_[A-Z0-9_]+)`/g)].map((m) => m[1] as string))];
  };

  it('reports a DSH_ variable nothing reads (a typo), but none docs/configuration.md documents', () => {
    const names = documented();
    expect(names.length).toBeGreaterThan(30);
    const env = Object.fromEntries(names.map((name) => [name, '']));
    expect(unknownSettings(env)).toEqual([]);
    expect(unknownSettings({ ...env, DSH_PROT: '8080', DSH_POLL_SIZE: '4', OTHER: 'x' })).toEqual([
      'DSH_POLL_SIZE',
      'DSH_PROT',
    ]);
  });

  it('refuses --port values as DSH_PORT refuses them', async () => {
    for (const bad of ['abc', '99999', '-1', '1.5', '']) {
      expect(await codeOf(Promise.resolve().then(() => portFrom('--port', bad))), bad).toBe('CONFIG_INVALID');
    }
    expect(portFrom('--port', '0')).toBe(0);
    expect(portFrom('--port', '8080')).toBe(8080);
  });
});

describe('the settings table drives parsing, --help and the docs', () => {
  const rows = Object.entries(SETTINGS);

  it('docs/configuration.md holds exactly the reference the table makes (node scripts/docs-settings.ts)', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(doc).toContain(settingsMarkdown());
  });

  it('--help names every setting the service reads, with its default', () => {
    const help = execFileSync(
      process.execPath,
      ['--no-node-snapshot', fileURLToPath(new URL('../../host/cli.ts', import.meta.url)), '--help'],
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
    );
    for (const [, row] of rows) expect(help).toMatch(new RegExp(`^  ${row.env}\\b.*; default `, 'm'));
  });

  it('reads every row from its variable, and refuses a value out of range naming the variable', async () => {
    const defaults = loadConfig({}, {}, '/srv');
    expect(Object.keys(defaults).sort()).toEqual(rows.map(([key]) => key).sort());
    for (const [key, row] of rows) {
      if (!('min' in row) && typeof defaults[key as keyof Config] !== 'number') continue;
      const error = await Promise.resolve()
        .then(() => loadConfig({}, { [row.env]: 'not a number' }, '/srv'))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error, row.env).toBeInstanceOf(SandboxError);
      expect((error as SandboxError).message, row.env).toContain(row.env);
    }
  });
});
