// The one place that reads environment variables. Precedence everywhere: explicit option >
// environment > default. Invalid configuration fails here, at start, with CONFIG_INVALID.

import { resolve } from 'node:path';
import { SandboxError } from './errors.ts';

export interface Config {
  /** Address the API listens on. Default 127.0.0.1 (env DSH_HOST). */
  host: string;
  /** Port. Default 7070; 0 picks a free one (env DSH_PORT). */
  port: number;
  /** Folder for the libsql file, the default tenant's key and logs. Default ./.data (env DSH_DATA_DIR). */
  dataDir: string;
  /** libsql database: a file path (default <dataDir>/dsh.db) (env DSH_DB). */
  database: string;
  /** Admin key for POST /v1/tenants; none means tenant creation only through the CLI (env DSH_ADMIN_KEY). */
  adminKey: string | undefined;
  /** Sandbox image tag; default: the one setup built for this checkout (env DSH_SANDBOX_IMAGE). */
  sandboxImage: string | undefined;
  /** Warm pool size of started, unassigned sandboxes. Default 2 (env DSH_POOL_SIZE). */
  poolSize: number;
  /** Isolate worker processes. Default 2 (env DSH_ISOLATE_WORKERS). */
  isolateWorkers: number;
}

const intFrom = (name: string, raw: string | undefined, fallback: number, min: number, max: number): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SandboxError('CONFIG_INVALID', `${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
};

export const loadConfig = (
  overrides: Partial<Config> = {},
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Config => {
  const dataDir = resolve(cwd, overrides.dataDir ?? env.DSH_DATA_DIR ?? '.data');
  return {
    host: overrides.host ?? env.DSH_HOST ?? '127.0.0.1',
    port: overrides.port ?? intFrom('DSH_PORT', env.DSH_PORT, 7070, 0, 65535),
    dataDir,
    database: overrides.database ?? env.DSH_DB ?? resolve(dataDir, 'dsh.db'),
    adminKey: overrides.adminKey ?? (env.DSH_ADMIN_KEY || undefined),
    sandboxImage: overrides.sandboxImage ?? (env.DSH_SANDBOX_IMAGE || undefined),
    poolSize: overrides.poolSize ?? intFrom('DSH_POOL_SIZE', env.DSH_POOL_SIZE, 2, 0, 64),
    isolateWorkers: overrides.isolateWorkers ?? intFrom('DSH_ISOLATE_WORKERS', env.DSH_ISOLATE_WORKERS, 2, 1, 64),
  };
};
