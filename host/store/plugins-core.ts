// Creator plugins and their packages (`cordis_define`), shared by every backend: input rules,
// content-addressed package ids, per-tenant maxima and ownership. Invariants: a package never
// changes once stored (its id is the SHA-256 of its content, so defining the same content under
// the same plugin again returns the stored package instead of a copy); every read and write takes
// the owner (tenant + agent), and another owner's plugin reads as absent; the count checks and the
// insert run in one backend transaction, so two defines at once never pass a maximum together.
// Every PluginStore method returns a Promise. A transaction names up front what it reads (the
// owner, a plugin, a package: PluginTxScope), the backend loads that inside it and runs the
// decision synchronously over it (PluginTx), then applies the writes: libsql reads lazily inside
// BEGIN IMMEDIATE; Postgres (pg/plugins.ts) locks the owner, loads the scope's rows first and
// applies the writes the decision recorded, which holds because the decisions here never read
// after writing. No await runs inside a decision.
import { createHash } from 'node:crypto';
import { customAlphabet } from 'nanoid';
import { SandboxError } from '../errors.ts';

/** Whose plugin it is: every plugin belongs to one agent of one tenant. */
export interface PluginOwner {
  tenantId: string;
  agentId: string;
}

/** `cordis_define`'s `plugin` argument (seed 000, "The Creator preset"). */
export type PluginSelector =
  /** Make a new plugin whose id starts with `idPrefix`. */
  | { kind: 'new'; idPrefix: string }
  /** Add a package to a plugin the agent already has. */
  | { kind: 'existing'; pluginId: string };

/** Plain JavaScript function bodies, not modules; at least one is present. */
export interface CordisCode {
  /** Runs in the plugin's isolate and returns the plugin (`{ name, apply(ctx, config) }` or a function). */
  host?: string;
  /** Runs in the client, which fetches it over the API; the service never runs it. */
  client?: string;
}

export interface PluginRecord {
  id: string;
  tenantId: string;
  agentId: string;
  idPrefix: string;
  /** The package the plugin last ran successfully; moves only on a successful run or update. */
  currentPackageId?: string;
  /** The plugin should be running: a restarted control plane starts it again. */
  running: boolean;
  createdAt: number;
}

export interface PackageRecord {
  /** `pkg_` + the first 24 hex digits of the SHA-256 of the content (name, purpose, code). */
  id: string;
  pluginId: string;
  name: string;
  purpose: string;
  code: CordisCode;
  /** UTF-8 bytes of host plus client code. */
  codeBytes: number;
  createdAt: number;
}

/** A package as lists show it: everything but the code. */
export type PackageSummary = Omit<PackageRecord, 'code'> & { hasHost: boolean; hasClient: boolean };

export interface DefineInput {
  plugin: PluginSelector;
  name: string;
  purpose: string;
  code: CordisCode;
}

export interface DefineResult {
  plugin: PluginRecord;
  package: PackageRecord;
  /** False when this plugin already had a package with exactly this content. */
  created: boolean;
}

/** Maxima one tenant's agents get (LIMIT_EXCEEDED past them). */
export interface PluginStoreLimits {
  /** Plugins one agent may define. Default 16. */
  pluginsPerAgent: number;
  /** Packages one plugin may hold. Default 32. */
  packagesPerPlugin: number;
  /** UTF-8 bytes of one package's host plus client code. Default 256 KiB. */
  codeBytes: number;
}

export const DEFAULT_PLUGIN_STORE_LIMITS: Readonly<PluginStoreLimits> = Object.freeze({
  pluginsPerAgent: 16,
  packagesPerPlugin: 32,
  codeBytes: 256 * 1024,
});

export interface PluginStore {
  /** Stores an immutable package, making the plugin first for `{ kind: 'new' }`. */
  define(owner: PluginOwner, input: DefineInput): Promise<DefineResult>;
  getPlugin(owner: PluginOwner, pluginId: string): Promise<PluginRecord | undefined>;
  /** The owner's plugins, oldest first. */
  listPlugins(owner: PluginOwner): Promise<PluginRecord[]>;
  /** Undefined for unknown packages and for plugins of another owner. */
  getPackage(owner: PluginOwner, pluginId: string, packageId: string): Promise<PackageRecord | undefined>;
  /** The plugin's packages, oldest first; empty for another owner's plugin. */
  listPackages(owner: PluginOwner, pluginId: string): Promise<PackageSummary[]>;
  /**
   * Records what the runtime did: whether the plugin should run, and the package it runs (kept
   * when omitted). NOT_FOUND for another owner's plugin or a package the plugin does not hold.
   */
  setRunState(
    owner: PluginOwner,
    pluginId: string,
    state: { running: boolean; currentPackageId?: string },
  ): Promise<PluginRecord>;
  /** Removes the plugin and its packages; false when the owner has no such plugin. */
  undefine(owner: PluginOwner, pluginId: string): Promise<boolean>;
  /** Every plugin of every tenant that should be running (what a restart resumes). */
  listRunning(): Promise<PluginRecord[]>;
}

/** What one transaction reads: the owner's plugins, and a plugin and a package of it when named. */
export interface PluginTxScope {
  owner: PluginOwner;
  pluginId?: string;
  packageId?: string;
}

/**
 * One transaction's view, synchronous: the reads are what its scope names (loaded, and locked
 * where the backend locks, before the decision runs), the writes are applied when it returns.
 * A decision reads before it writes: a backend may answer reads from what it loaded up front.
 */
export interface PluginTx {
  /** The owner's plugins. */
  countPlugins(): number;
  /** The scope's plugin, when the owner has it. */
  plugin(): PluginRecord | undefined;
  /** The scope's package of the scope's plugin. */
  package(): PackageRecord | undefined;
  /** The packages the scope's plugin holds (0 without one). */
  countPackages(): number;
  insertPlugin(plugin: PluginRecord): void;
  insertPackage(pkg: PackageRecord): void;
  updatePlugin(pluginId: string, state: { running: boolean; currentPackageId: string | undefined }): void;
  /** Deletes the plugin and its packages. */
  deletePlugin(pluginId: string): void;
}

/** What a backend that reads inside its transaction (libsql, memory) looks up when asked. */
export interface PluginLookups {
  countPlugins(): number;
  /** The plugin when the scope's owner has it. */
  plugin(pluginId: string): PluginRecord | undefined;
  package(pluginId: string, packageId: string): PackageRecord | undefined;
  countPackages(pluginId: string): number;
}

/**
 * A PluginTx's reads over lookups run when asked: the scope's package, and its plugin's package
 * count, only when the scope names a plugin the owner has (another owner's reads as absent).
 */
export const lazyPluginReads = (
  { pluginId, packageId }: PluginTxScope,
  find: PluginLookups,
): Pick<PluginTx, 'countPlugins' | 'plugin' | 'package' | 'countPackages'> => {
  const plugin = () => (pluginId === undefined ? undefined : find.plugin(pluginId));
  return {
    countPlugins: () => find.countPlugins(),
    plugin,
    package: () =>
      pluginId === undefined || packageId === undefined || plugin() === undefined
        ? undefined
        : find.package(pluginId, packageId),
    countPackages: () =>
      pluginId === undefined || plugin() === undefined ? 0 : find.countPackages(pluginId),
  };
};

/** Persistence for plugins and packages. */
export interface PluginBackend {
  /**
   * Runs `fn` over `scope`'s rows in one atomic transaction and commits its writes; when `fn`
   * throws nothing is written and the promise rejects with its error. `fn` is synchronous.
   */
  transaction<T>(scope: PluginTxScope, fn: (tx: PluginTx) => T): Promise<T>;
  /** Only the owner's plugin. */
  getPlugin(owner: PluginOwner, pluginId: string): Promise<PluginRecord | undefined>;
  listPlugins(owner: PluginOwner): Promise<PluginRecord[]>;
  listRunning(): Promise<PluginRecord[]>;
  /** Only a package of the owner's plugin. */
  getPackage(owner: PluginOwner, pluginId: string, packageId: string): Promise<PackageRecord | undefined>;
  /** The owner's plugin's packages, oldest first; empty for another owner's plugin. */
  listPackages(owner: PluginOwner, pluginId: string): Promise<PackageRecord[]>;
}

export interface PluginStoreOptions {
  /** Clock. Default Date.now. */
  now?: () => number;
  /** The maxima of a tenant; fields it leaves out come from DEFAULT_PLUGIN_STORE_LIMITS. */
  limitsOf?: (tenantId: string) => Partial<PluginStoreLimits> | undefined;
}

/** 1 to 32 letters, digits, `_` or `-`, starting with a letter. */
export const ID_PREFIX = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;
const NAME_CHARS = 200;
const PURPOSE_CHARS = 4000;
const suffix = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 10);

/** The content address of a package: the same name, purpose and code give the same id. */
export const packageIdOf = (name: string, purpose: string, code: CordisCode): string =>
  `pkg_${createHash('sha256')
    .update(JSON.stringify([name, purpose, code.host ?? null, code.client ?? null]))
    .digest('hex')
    .slice(0, 24)}`;

const invalid = (message: string, data?: Record<string, unknown>): SandboxError =>
  new SandboxError('INVALID_ARGUMENTS', message, data === undefined ? {} : { data });

const checkInput = (input: DefineInput, limits: PluginStoreLimits): number => {
  if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > NAME_CHARS)
    throw invalid(`A package needs a name of 1 to ${NAME_CHARS} characters.`);
  if (typeof input.purpose !== 'string' || input.purpose.length > PURPOSE_CHARS)
    throw invalid(`A package's purpose is a string of at most ${PURPOSE_CHARS} characters.`);
  const { host, client } = input.code ?? {};
  if (
    (host !== undefined && typeof host !== 'string') ||
    (client !== undefined && typeof client !== 'string')
  )
    throw invalid('code.host and code.client are JavaScript function bodies (strings).');
  if (host === undefined && client === undefined)
    throw invalid('A package needs code.host, code.client or both.');
  const bytes = Buffer.byteLength(host ?? '') + Buffer.byteLength(client ?? '');
  if (bytes > limits.codeBytes) {
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `The package's code is ${bytes} bytes; a package may hold at most ${limits.codeBytes}. Split it or make it smaller.`,
      { data: { codeBytes: bytes, limit: limits.codeBytes } },
    );
  }
  return bytes;
};

const summary = ({ code, ...rest }: PackageRecord): PackageSummary => ({
  ...rest,
  hasHost: code.host !== undefined,
  hasClient: code.client !== undefined,
});

const notFound = (pluginId: string): SandboxError =>
  new SandboxError(
    'NOT_FOUND',
    `This agent has no plugin ${pluginId}; cordis_inspect_self lists its plugins.`,
    {
      data: { pluginId },
    },
  );

/** Makes the owner's new plugin in `tx`, within the plugins-per-agent maximum. */
function newPlugin(
  tx: PluginTx,
  owner: PluginOwner,
  idPrefix: string,
  limits: PluginStoreLimits,
  now: () => number,
): PluginRecord {
  const count = tx.countPlugins();
  if (count >= limits.pluginsPerAgent) {
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This agent already has ${count} plugins, the most it may have; undefine one it no longer needs.`,
      { data: { plugins: count, limit: limits.pluginsPerAgent } },
    );
  }
  const plugin: PluginRecord = {
    id: `${idPrefix}-${suffix()}`,
    tenantId: owner.tenantId,
    agentId: owner.agentId,
    idPrefix,
    running: false,
    createdAt: now(),
  };
  tx.insertPlugin(plugin);
  return plugin;
}

export const createPluginStore = (backend: PluginBackend, options: PluginStoreOptions = {}): PluginStore => {
  const now = options.now ?? Date.now;
  const limitsOf = (tenantId: string): PluginStoreLimits => ({
    ...DEFAULT_PLUGIN_STORE_LIMITS,
    ...options.limitsOf?.(tenantId),
  });

  async function define(owner: PluginOwner, input: DefineInput): Promise<DefineResult> {
    const limits = limitsOf(owner.tenantId);
    const codeBytes = checkInput(input, limits);
    const code: CordisCode = {};
    if (input.code.host !== undefined) code.host = input.code.host;
    if (input.code.client !== undefined) code.client = input.code.client;
    const id = packageIdOf(input.name, input.purpose, code);
    const selector = input.plugin;
    if (selector?.kind === 'new') {
      if (typeof selector.idPrefix !== 'string' || !ID_PREFIX.test(selector.idPrefix))
        throw invalid('idPrefix is 1 to 32 letters, digits, _ or -, starting with a letter.', {
          idPrefix: selector.idPrefix,
        });
    } else if (selector?.kind !== 'existing')
      throw invalid("plugin is { kind: 'new', idPrefix } or { kind: 'existing', pluginId }.");
    const scope: PluginTxScope =
      selector.kind === 'new' ? { owner } : { owner, pluginId: selector.pluginId, packageId: id };
    return backend.transaction(scope, (tx) => {
      let plugin: PluginRecord | undefined;
      if (selector.kind === 'new') plugin = newPlugin(tx, owner, selector.idPrefix, limits, now);
      else {
        plugin = tx.plugin();
        if (plugin === undefined) throw notFound(selector.pluginId);
        const stored = tx.package();
        if (stored !== undefined) return { plugin, package: stored, created: false };
      }
      // A new plugin holds no package yet.
      const count = selector.kind === 'new' ? 0 : tx.countPackages();
      if (count >= limits.packagesPerPlugin) {
        throw new SandboxError(
          'LIMIT_EXCEEDED',
          `Plugin ${plugin.id} already holds ${count} packages, the most one plugin may hold; define a new plugin.`,
          { data: { packages: count, limit: limits.packagesPerPlugin } },
        );
      }
      const pkg: PackageRecord = {
        id,
        pluginId: plugin.id,
        name: input.name,
        purpose: input.purpose,
        code,
        codeBytes,
        createdAt: now(),
      };
      tx.insertPackage(pkg);
      return { plugin, package: pkg, created: true };
    });
  }

  return {
    define,
    getPlugin: (owner, pluginId) => backend.getPlugin(owner, pluginId),
    listPlugins: (owner) => backend.listPlugins(owner),
    getPackage: (owner, pluginId, packageId) => backend.getPackage(owner, pluginId, packageId),
    listPackages: async (owner, pluginId) => (await backend.listPackages(owner, pluginId)).map(summary),
    setRunState: (owner, pluginId, state) =>
      backend.transaction(
        {
          owner,
          pluginId,
          ...(state.currentPackageId === undefined ? {} : { packageId: state.currentPackageId }),
        },
        (tx) => {
          const plugin = tx.plugin();
          if (plugin === undefined) throw notFound(pluginId);
          // A package the plugin runs already was checked when it was set, and packages leave
          // only with their plugin: only a newly named one needs checking.
          if (state.currentPackageId !== undefined && tx.package() === undefined) {
            throw new SandboxError(
              'NOT_FOUND',
              `Plugin ${pluginId} has no package ${state.currentPackageId}.`,
              { data: { pluginId, packageId: state.currentPackageId } },
            );
          }
          const currentPackageId = state.currentPackageId ?? plugin.currentPackageId;
          tx.updatePlugin(pluginId, { running: state.running, currentPackageId });
          const updated: PluginRecord = { ...plugin, running: state.running };
          if (currentPackageId !== undefined) updated.currentPackageId = currentPackageId;
          return updated;
        },
      ),
    undefine: (owner, pluginId) =>
      backend.transaction({ owner, pluginId }, (tx) => {
        if (tx.plugin() === undefined) return false;
        tx.deletePlugin(pluginId);
        return true;
      }),
    listRunning: () => backend.listRunning(),
  };
};
