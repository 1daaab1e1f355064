// The admin commands of the command line (host/cli.ts): `tenants`, `keys` and `nodes`, the
// store-side twin of the admin API (/v1/tenants…, /v1/nodes…), and `retention` (the log's retention pass, its space): each opens the store the service uses (DSH_DB or the data
// directory), does one thing, prints JSON and closes it, so they work whether the service runs or
// not. A key is printed once, at creation. `tenants delete` marks the tenant deleting and revokes
// its keys (refused at once by a service on PostgreSQL, which hears the wake-up; within 2 s by one
// on the same SQLite file); the removal itself is run by the service (tenants/deletion.ts), which
// picks deleting tenants up within DELETION_POLL_MS (10 s, serve.ts), or at its next start.
// `nodes cordon` writes the cordon the service's placement reads at its next placement (every
// replica's); whether a node answers only the running service knows (GET /v1/nodes).
import { settingsOf } from './agents/tenant-settings.ts';
import type { Config } from './config.ts';
import type { Store } from './store/index.ts';
import type { TenantQuotas } from './store/tenants-port.ts';
import { createLogRetention } from './tenants/retention.ts';

export const ADMIN_USAGE = `  tenants list                       every tenant with its state
  tenants get <id>                   one tenant, with what is left while it is being deleted
  tenants create <name>              a tenant and its first API key (printed once)
  tenants delete <id>                refuse the tenant at once; the service removes its things
  tenants limits <id> [--agents N|none] [--disk-mb N|none] [--log-bytes N|none] [--plugins N|none]
                 [--checkpoint-bytes N|none]
                                     the tenant's quotas; --agents sets (none: clears) its agent
                                     quota, --disk-mb its workspace quota in MiB, --log-bytes its
                                     log budget, --plugins its running plugins, --checkpoint-bytes
                                     its agents' checkpoint bytes together; others are kept
  keys list <tenant>                 the tenant's keys (never the keys themselves)
  keys create <tenant> [--name N] [--expires-at T]
                                     a further key (printed once); T: epoch ms or an ISO date
  keys revoke <tenant> <key>         refused from the next request (its last key too)
  nodes list                         the nodes of DSH_NODES: cordoned, agents on each
  nodes cordon|uncordon <name>       no new agents on the node (its agents keep working) / again
  nodes instance                     this store's instance id: what the control plane's node
                                     certificate must name (scripts/node-certs.ts control)
  retention status                   each tenant's log bytes, and the store's free pages
  retention run                      one retention pass now (each tenant's log settings, DSH_LOG_RETENTION_MAX_DAYS)
  retention vacuum                   libsql, service stopped: rebuild the file so freed space can be given back`;

export interface AdminFlags {
  name?: string;
  expiresAt?: string;
  agents?: string;
  diskMb?: string;
  logBytes?: string;
  plugins?: string;
  checkpointBytes?: string;
}

/** The tenant's quotas with the flags' changes: a number sets one, `none` clears it, an absent flag keeps it. */
const quotasWith = (quotas: TenantQuotas, flags: AdminFlags): TenantQuotas => {
  const next: Record<string, number | undefined> = { ...quotas };
  for (const [name, flag] of [
    ['agents', flags.agents],
    ['diskMb', flags.diskMb],
    ['logBytes', flags.logBytes],
    ['plugins', flags.plugins],
    ['checkpointBytes', flags.checkpointBytes],
  ] as const)
    if (flag !== undefined) next[name] = flag === 'none' ? undefined : Number(flag);
  return next as TenantQuotas;
};

/** Epoch ms from `--expires-at` (a number, or a date Date.parse reads). */
const expiryOf = (text: string): number => {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms))
    throw new Error(`--expires-at ${text}: give epoch milliseconds or an ISO date`);
  return ms;
};

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

/** Runs `tenants …` against the store; the exit code (2: usage). */
const tenants = async (store: Store, [verb, arg]: string[], flags: AdminFlags): Promise<number> => {
  if (verb === 'list') print(await store.tenants.listTenants());
  else if (verb === 'limits' && arg) {
    const current = await store.tenants.getTenant(arg);
    if (current === undefined) throw new Error(`no tenant ${arg}`);
    const tenant = [flags.agents, flags.diskMb, flags.logBytes, flags.plugins, flags.checkpointBytes].every(
      (f) => f === undefined,
    )
      ? current
      : await store.tenants.setQuotas(arg, quotasWith(current.quotas ?? {}, flags));
    if (tenant === undefined) throw new Error(`no tenant ${arg}`);
    print({ id: tenant.id, quotas: tenant.quotas ?? {} });
  } else if (verb === 'create' && arg) print(await store.tenants.createTenant(arg));
  else if ((verb === 'get' || verb === 'delete') && arg) {
    const tenant =
      verb === 'get' ? await store.tenants.getTenant(arg) : await store.tenants.beginDeletion(arg);
    if (tenant === undefined) throw new Error(`no tenant ${arg}`);
    print(
      tenant.state === 'deleting' ? { ...tenant, remaining: await store.tenantPurge.remaining(arg) } : tenant,
    );
  } else return 2;
  return 0;
};

/** Runs `keys …` against the store; the exit code (2: usage). */
const keys = async (store: Store, [verb, tenantId, keyId]: string[], flags: AdminFlags): Promise<number> => {
  if (!tenantId) return 2;
  if (verb === 'list') {
    if ((await store.tenants.getTenant(tenantId)) === undefined) throw new Error(`no tenant ${tenantId}`);
    print(await store.tenants.listKeys(tenantId));
  } else if (verb === 'create') {
    const key = await store.tenants.createKey(tenantId, {
      ...(flags.name === undefined ? {} : { name: flags.name }),
      ...(flags.expiresAt === undefined ? {} : { expiresAt: expiryOf(flags.expiresAt) }),
    });
    print({ id: key.keyId, apiKey: key.apiKey });
  } else if (verb === 'revoke' && keyId) {
    const outcome = await store.tenants.revokeTenantKey(tenantId, keyId, { allowLast: true });
    if (outcome !== 'revoked') throw new Error(`no live key ${keyId} of tenant ${tenantId}`);
    print({ id: keyId, revoked: true });
  } else return 2;
  return 0;
};

/** Runs `nodes …` against the store, for the nodes DSH_NODES names; the exit code (2: usage). */
const nodes = async (store: Store, config: Config, [verb, name]: string[]): Promise<number> => {
  const known = new Map(config.nodes.map((n) => [n.name, n.url]));
  const list = async () => {
    const [cordoned, counts] = await Promise.all([store.nodes.cordoned(), store.nodes.agentCounts()]);
    return [...known].map(([node, url]) => ({
      name: node,
      url,
      cordoned: cordoned.includes(node) || config.nodesCordoned.includes(node),
      agents: counts.get(node) ?? 0,
    }));
  };
  if (verb === 'list') print(await list());
  // Made with the store (a new data directory gets its id here), so a certificate can name it before the first start.
  else if (verb === 'instance' && name === undefined) print({ instance: store.instanceId });
  else if ((verb === 'cordon' || verb === 'uncordon') && name) {
    if (!known.has(name)) throw new Error(`no node ${name} in DSH_NODES`);
    await store.nodes.setCordon(name, verb === 'cordon');
    print((await list()).find((n) => n.name === name));
  } else return 2;
  return 0;
};

/**
 * Runs `retention …` against the store; the exit code (2: usage). `run` is the service's pass
 * (tenants/retention.ts) in this process: a running service's own count of each tenant's bytes
 * learns of it at its next pass. `vacuum` rebuilds a libsql file made before retention
 * (auto_vacuum NONE) as INCREMENTAL, so compact() can give pages back: it needs the file to itself.
 */
const retention = async (store: Store, [verb]: string[], config: Config): Promise<number> => {
  const db = (store as { db?: { pragma(source: string): unknown; exec(sql: string): void } }).db;
  const pragma = (name: string) =>
    Number(((db?.pragma(name) ?? []) as Record<string, unknown>[])[0]?.[name] ?? 0);
  if (verb === 'status') {
    print({
      backend: store.backend,
      tenants: await store.logRetention.tenants(),
      ...(db === undefined
        ? {}
        : {
            autoVacuum: ['none', 'full', 'incremental'][pragma('auto_vacuum')],
            pages: pragma('page_count'),
            freePages: pragma('freelist_count'),
          }),
    });
  } else if (verb === 'run') {
    const pass = await createLogRetention({
      store: store.logRetention,
      settings: { get: async (tenantId) => settingsOf(await store.tenantSettings.get(tenantId)) },
      events: store.events,
      maxDays: config.logRetentionMaxDays,
      onError: (tenantId, error) =>
        process.stderr.write(
          `tenant ${tenantId}: ${error instanceof Error ? error.message : String(error)}\n`,
        ),
    }).run();
    print(pass);
  } else if (verb === 'vacuum') {
    if (db === undefined)
      throw new Error('PostgreSQL: run VACUUM FULL on the events and payloads tables (docs/operations.md)');
    db.exec('PRAGMA auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
    print({
      autoVacuum: ['none', 'full', 'incremental'][pragma('auto_vacuum')],
      pages: pragma('page_count'),
    });
  } else return 2;
  return 0;
};

/** `tenants …`, `keys …`, `nodes …` or `retention …` on the configured store. The exit code; 2 prints the usage. */
export const runAdmin = async (
  config: Config,
  command: 'tenants' | 'keys' | 'nodes' | 'retention',
  args: string[],
  flags: AdminFlags,
): Promise<number> => {
  const { connectStore } = await import('./store/connect.ts');
  const store = await connectStore({
    database: config.database,
    dataDir: config.dataDir,
    poolSize: config.databasePool,
    ...(config.secretsKey === undefined ? {} : { secretsKey: config.secretsKey }),
  });
  try {
    const code =
      command === 'tenants'
        ? await tenants(store, args, flags)
        : command === 'nodes'
          ? await nodes(store, config, args)
          : command === 'keys'
            ? await keys(store, args, flags)
            : await retention(store, args, config);
    if (code === 2) process.stderr.write(`usage:\n${ADMIN_USAGE}\n`);
    return code;
  } finally {
    await store.close();
  }
};
