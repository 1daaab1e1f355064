// Creator plugins and their packages (`cordis_define`), shared by every backend: input rules,
// content-addressed package ids, per-tenant maxima and ownership. Invariants: a package never
// changes once stored (its id is the SHA-256 of its content, so defining the same content under
// the same plugin again returns the stored package instead of a copy); every read and write takes
// the owner (tenant + agent), and another owner's plugin reads as absent; the count checks and the
// insert run in one backend transaction, so two defines at once never pass a maximum together.
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
  define(owner: PluginOwner, input: DefineInput): DefineResult;
  getPlugin(owner: PluginOwner, pluginId: string): PluginRecord | undefined;
  /** The owner's plugins, oldest first. */
  listPlugins(owner: PluginOwner): PluginRecord[];
  /** Undefined for unknown packages and for plugins of another owner. */
  getPackage(owner: PluginOwner, pluginId: string, packageId: string): PackageRecord | undefined;
  /** The plugin's packages, oldest first; empty for another owner's plugin. */
  listPackages(owner: PluginOwner, pluginId: string): PackageSummary[];
  /**
   * Records what the runtime did: whether the plugin should run, and the package it runs (kept
   * when omitted). NOT_FOUND for another owner's plugin or a package the plugin does not hold.
   */
  setRunState(
    owner: PluginOwner,
    pluginId: string,
    state: { running: boolean; currentPackageId?: string },
  ): PluginRecord;
  /** Removes the plugin and its packages; false when the owner has no such plugin. */
  undefine(owner: PluginOwner, pluginId: string): boolean;
  /** Every plugin of every tenant that should be running (what a restart resumes). */
  listRunning(): PluginRecord[];
}

/** Persistence for plugins and packages. Every method is synchronous; `transaction` is atomic. */
export interface PluginBackend {
  transaction<T>(fn: () => T): T;
  insertPlugin(plugin: PluginRecord): void;
  /** Only the owner's plugin. */
  getPlugin(owner: PluginOwner, pluginId: string): PluginRecord | undefined;
  listPlugins(owner: PluginOwner): PluginRecord[];
  countPlugins(owner: PluginOwner): number;
  updatePlugin(pluginId: string, state: { running: boolean; currentPackageId: string | undefined }): void;
  /** Deletes the plugin and its packages. */
  deletePlugin(pluginId: string): void;
  listRunning(): PluginRecord[];
  insertPackage(pkg: PackageRecord): void;
  getPackage(pluginId: string, packageId: string): PackageRecord | undefined;
  listPackages(pluginId: string): PackageRecord[];
  countPackages(pluginId: string): number;
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

export const createPluginStore = (backend: PluginBackend, options: PluginStoreOptions = {}): PluginStore => {
  const now = options.now ?? Date.now;
  const limitsOf = (tenantId: string): PluginStoreLimits => ({
    ...DEFAULT_PLUGIN_STORE_LIMITS,
    ...options.limitsOf?.(tenantId),
  });

  function newPlugin(owner: PluginOwner, idPrefix: string, limits: PluginStoreLimits): PluginRecord {
    if (typeof idPrefix !== 'string' || !ID_PREFIX.test(idPrefix))
      throw invalid('idPrefix is 1 to 32 letters, digits, _ or -, starting with a letter.', { idPrefix });
    const count = backend.countPlugins(owner);
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
    backend.insertPlugin(plugin);
    return plugin;
  }

  function define(owner: PluginOwner, input: DefineInput): DefineResult {
    const limits = limitsOf(owner.tenantId);
    const codeBytes = checkInput(input, limits);
    const code: CordisCode = {};
    if (input.code.host !== undefined) code.host = input.code.host;
    if (input.code.client !== undefined) code.client = input.code.client;
    const id = packageIdOf(input.name, input.purpose, code);
    return backend.transaction(() => {
      const selector = input.plugin;
      let plugin: PluginRecord | undefined;
      if (selector?.kind === 'new') plugin = newPlugin(owner, selector.idPrefix, limits);
      else if (selector?.kind === 'existing') {
        plugin = backend.getPlugin(owner, selector.pluginId);
        if (plugin === undefined) throw notFound(selector.pluginId);
      } else throw invalid("plugin is { kind: 'new', idPrefix } or { kind: 'existing', pluginId }.");
      const stored = backend.getPackage(plugin.id, id);
      if (stored !== undefined) return { plugin, package: stored, created: false };
      const count = backend.countPackages(plugin.id);
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
      backend.insertPackage(pkg);
      return { plugin, package: pkg, created: true };
    });
  }

  return {
    define,
    getPlugin: (owner, pluginId) => backend.getPlugin(owner, pluginId),
    listPlugins: (owner) => backend.listPlugins(owner),
    getPackage: (owner, pluginId, packageId) =>
      backend.getPlugin(owner, pluginId) === undefined ? undefined : backend.getPackage(pluginId, packageId),
    listPackages: (owner, pluginId) =>
      backend.getPlugin(owner, pluginId) === undefined ? [] : backend.listPackages(pluginId).map(summary),
    setRunState: (owner, pluginId, state) =>
      backend.transaction(() => {
        const plugin = backend.getPlugin(owner, pluginId);
        if (plugin === undefined) throw notFound(pluginId);
        const currentPackageId = state.currentPackageId ?? plugin.currentPackageId;
        if (currentPackageId !== undefined && backend.getPackage(pluginId, currentPackageId) === undefined) {
          throw new SandboxError('NOT_FOUND', `Plugin ${pluginId} has no package ${currentPackageId}.`, {
            data: { pluginId, packageId: currentPackageId },
          });
        }
        backend.updatePlugin(pluginId, { running: state.running, currentPackageId });
        const updated: PluginRecord = { ...plugin, running: state.running };
        if (currentPackageId !== undefined) updated.currentPackageId = currentPackageId;
        return updated;
      }),
    undefine: (owner, pluginId) =>
      backend.transaction(() => {
        if (backend.getPlugin(owner, pluginId) === undefined) return false;
        backend.deletePlugin(pluginId);
        return true;
      }),
    listRunning: () => backend.listRunning(),
  };
};
