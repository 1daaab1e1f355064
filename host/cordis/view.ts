// One agent's plugins as the cordis_* tools and the API see them: the stored plugin and its
// packages joined with what the runtime knows of it now (state, tools, logs, the last failure).
// Every read takes the agent's owner, so another agent's plugin reads as absent (NOT_FOUND).
// Everything that reads the store is async (one read of the plugin, then what it asks for).

import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { PluginFailure, PluginStatus } from '../plugins/index.ts';
import type {
  DefineInput,
  DefineResult,
  PackageRecord,
  PackageSummary,
  PluginOwner,
  PluginRecord,
  PluginStore,
} from '../store/plugins-core.ts';
import type { Inspector } from './inspect.ts';

/** A plugin as lists show it. */
export interface PluginView {
  id: string;
  idPrefix: string;
  /** stopped | starting | running | failed (stopped when this process never ran it). */
  state: PluginStatus['state'];
  /** The package it runs (or ran last successfully). */
  currentPackageId?: string;
  /** Whether a restart starts it again. */
  running: boolean;
  name?: string;
  tools: string[];
  /** Inspection providers it provides now (cordis_inspect_list shows their methods). */
  providers: string[];
  error?: PluginFailure;
  createdAt: number;
}

/** A plugin with its packages and its recent logs. */
export interface PluginDetail extends PluginView {
  packages: PackageSummary[];
  logs: PluginStatus['logs'];
  droppedLogs: number;
  restarts: number;
}

export interface LaunchOutcome {
  status: PluginStatus;
  error?: PluginFailure;
  /**
   * The stable code of a refused registration (TOOL_NAME_TAKEN …) that made the start fail, or of a
   * refusal to place it (LIMIT_EXCEEDED past a cap of its agent or tenant, ISOLATE_UNAVAILABLE).
   */
  code?: SandboxError['code'];
}

export interface AgentPlugins {
  readonly agent: Agent;
  /** Inspection providers (cordis_inspect_list / cordis_inspect_query). */
  readonly inspect: Inspector;
  define(input: DefineInput): Promise<DefineResult>;
  run(pluginId: string, packageId: string, mode: 'run' | 'update'): Promise<LaunchOutcome>;
  stop(pluginId: string): Promise<PluginView>;
  undefine(pluginId: string): Promise<void>;
  list(): Promise<PluginView[]>;
  /** NOT_FOUND for a plugin the agent does not have. */
  get(pluginId: string): Promise<PluginDetail>;
  /** NOT_FOUND for a package the plugin does not hold; the code included. */
  package(pluginId: string, packageId: string): Promise<PackageRecord>;
}

export interface AgentPluginsOptions {
  agent: Agent;
  owner: PluginOwner;
  store: PluginStore;
  /** What the runtime knows of one of the agent's plugins now (undefined: never ran here). */
  status(pluginId: string): PluginStatus | undefined;
  inspect: Inspector;
  define(input: DefineInput): Promise<DefineResult>;
  launch(pluginId: string, packageId: string, mode: 'run' | 'update'): Promise<LaunchOutcome>;
  stop(pluginId: string): Promise<PluginStatus | undefined>;
  undefine(pluginId: string): Promise<boolean>;
}

const notFound = (pluginId: string): SandboxError =>
  new SandboxError(
    'NOT_FOUND',
    `This agent has no plugin ${pluginId}; cordis_inspect_self lists its plugins.`,
    {
      data: { pluginId },
    },
  );

export function agentPlugins(options: AgentPluginsOptions): AgentPlugins {
  const { owner, store } = options;

  function view(record: PluginRecord, status = options.status(record.id)): PluginView {
    const out: PluginView = {
      id: record.id,
      idPrefix: record.idPrefix,
      state: status?.state ?? 'stopped',
      running: record.running,
      tools: status?.tools ?? [],
      providers: status?.providers ?? [],
      createdAt: record.createdAt,
    };
    if (record.currentPackageId !== undefined) out.currentPackageId = record.currentPackageId;
    if (status?.name !== undefined) out.name = status.name;
    if (status?.error !== undefined) out.error = status.error;
    return out;
  }

  async function record(pluginId: string): Promise<PluginRecord> {
    const found = await store.getPlugin(owner, pluginId);
    if (found === undefined) throw notFound(pluginId);
    return found;
  }

  return {
    agent: options.agent,
    inspect: options.inspect,
    define: options.define,
    async run(pluginId, packageId, mode) {
      await record(pluginId);
      return options.launch(pluginId, packageId, mode);
    },
    async stop(pluginId) {
      await record(pluginId);
      const status = await options.stop(pluginId);
      return view(await record(pluginId), status);
    },
    async undefine(pluginId) {
      await record(pluginId);
      if (!(await options.undefine(pluginId))) throw notFound(pluginId);
    },
    list: async () => (await store.listPlugins(owner)).map((r) => view(r)),
    async get(pluginId) {
      const found = await record(pluginId);
      const packages = await store.listPackages(owner, pluginId);
      // The runtime's status after the reads, as it is when the detail is answered.
      const status = options.status(pluginId);
      return {
        ...view(found, status),
        packages,
        logs: status?.logs ?? [],
        droppedLogs: status?.droppedLogs ?? 0,
        restarts: status?.restarts ?? 0,
      };
    },
    async package(pluginId, packageId) {
      await record(pluginId);
      const pkg = await store.getPackage(owner, pluginId, packageId);
      if (pkg === undefined)
        throw new SandboxError('NOT_FOUND', `Plugin ${pluginId} has no package ${packageId}.`, {
          data: { pluginId, packageId },
        });
      return pkg;
    },
  };
}
