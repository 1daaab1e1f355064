// Opens the store DSH_DB names: a `postgres://` URL opens PostgreSQL (./pg/index.ts, loaded only
// then, so the default start never loads pg), anything else the libsql file (./index.ts, the
// default). Invariant: both give the same Store; what differs is where the secrets key comes from
// when the operator set none: libsql keeps a key file next to its database, PostgreSQL (a
// database several replicas share) one in this process's data directory, which every replica
// must then be given (DSH_SECRETS_KEY) — said at start.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EventFence } from './event-log-port.ts';
import { type OpenStoreOptions, openStore } from './index.ts';
import { isPostgresUrl } from './pg/url.ts';
import { keyFileSecret } from './sealed.ts';
import type { Store } from './store.ts';

export interface ConnectStoreOptions
  extends Pick<OpenStoreOptions, 'now' | 'onError' | 'logBudgetBytes' | 'pluginLimitsOf' | 'secretsKey'> {
  /** DSH_DB: a libsql path or `file:` URL, or a `postgres://` URL. */
  database: string;
  /** The data directory (the PostgreSQL store's default key file lives there). */
  dataDir: string;
  /** Connections to PostgreSQL this process may hold (DSH_DB_POOL). */
  poolSize?: number;
  /** Told once how the PostgreSQL store got its secrets key when none was set. */
  log?: (line: string) => void;
  /** Replicas on PostgreSQL: the fence events are written under (the embedded store has none). */
  fence?: EventFence;
}

export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * The file a libsql DSH_DB names: a path, or a `file:` URL made a path here (given to openStore as
 * a path it would be read as a relative file named `file:…`, and a `url` gets no key file).
 */
export const libsqlPath = (database: string): string =>
  database.startsWith('file:') ? fileURLToPath(new URL(database, 'file:///')) : database;

/**
 * The key a PostgreSQL store seals secrets with: DSH_SECRETS_KEY, else the key file in the data
 * directory (made on first use, and the operator told once that every replica needs the same
 * key). Undefined for a libsql store, which keeps its own key file next to its database. Replicas
 * also derive the key they sign forwarded requests with from it (host/api/forward/sign.ts).
 */
export const storeSecretsKey = (
  options: Pick<ConnectStoreOptions, 'database' | 'dataDir' | 'secretsKey' | 'log'>,
): Buffer | undefined => {
  if (!isPostgresUrl(options.database)) return options.secretsKey;
  if (options.secretsKey !== undefined) return options.secretsKey;
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const file = join(options.dataDir, SECRETS_KEY_FILE);
  const key = keyFileSecret(file);
  options.log?.(
    `secrets are sealed with the key in ${file}: give every replica on this database the same key (DSH_SECRETS_KEY)`,
  );
  return key;
};

export const connectStore = async (options: ConnectStoreOptions): Promise<Store> => {
  const { database, secretsKey, now, onError, logBudgetBytes, pluginLimitsOf } = options;
  const shared = {
    ...(now === undefined ? {} : { now }),
    ...(onError === undefined ? {} : { onError }),
    ...(logBudgetBytes === undefined ? {} : { logBudgetBytes }),
    ...(pluginLimitsOf === undefined ? {} : { pluginLimitsOf }),
  };
  if (!isPostgresUrl(database))
    return openStore({
      path: libsqlPath(database),
      ...shared,
      ...(secretsKey === undefined ? {} : { secretsKey }),
    });
  const { openPgStore } = await import('./pg/index.ts');
  return openPgStore({
    url: database,
    secretsKey: storeSecretsKey(options) as Buffer,
    ...shared,
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    ...(options.fence === undefined ? {} : { fence: options.fence }),
  });
};
