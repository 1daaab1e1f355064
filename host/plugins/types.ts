// The public vocabulary of the creator-plugin runtime: the states a plugin goes through, the limits
// that bound it, and the host capabilities the caller hands it (the only things a plugin can reach).
// Everything here is data or an interface; runtime.ts implements it.
import type { ErrorCode } from '../errors.ts';
import type { JsonValue } from '../json.ts';

export type { JsonValue };

/** A JSON Schema document as a plugin registered it (validated by the caller's registry). */
export type JsonSchema = { [key: string]: unknown };

export type PluginState =
  /** Not loaded: never started, or stopped. Nothing of it is registered. */
  | 'stopped'
  /** Its isolate is being made and its `apply` runs. */
  | 'starting'
  /** Applied; its tools are registered and its listeners live. */
  | 'running'
  /** Ended by an error or a budget; `error` says why. Nothing of it is registered. */
  | 'failed';

/** Why a plugin ended `failed` (or why a start or update did not happen). */
export type PluginFailureKind =
  | 'compile' // the host body does not parse
  | 'apply' // the body or apply() threw, or the body returned no plugin
  | 'timeout' // a callback ran past its CPU budget or its wall-clock bound, or a start past its wall clock
  | 'memory' // the isolate's heap limit
  | 'limit' // a count or size cap (messages per callback, value sizes; the tenant's or agent's running plugins)
  | 'refused' // the host refused a registration (a name it may not have, a bad schema)
  | 'crash' // the plugin process died while this plugin ran
  | 'unavailable'; // the host had no plugin worker left for it, or the runtime is shutting down

export interface PluginFailure {
  kind: PluginFailureKind;
  message: string;
  /** The stable code of a refusal to place it (LIMIT_EXCEEDED, ISOLATE_UNAVAILABLE, SHUTTING_DOWN). */
  code?: ErrorCode;
  /** Which of its tenant's or agent's caps refused it, and that cap (LIMIT_EXCEEDED). */
  limit?: { name: string; max: number };
  /** The plugin's own stack (lines of its host body), when it threw. */
  stack?: string;
  at: number;
}

/**
 * Bounds of one plugin, and of a tenant's plugins together (the `max…PerAgent`, `max…PerTenant`
 * fields: what placement on the tenant's worker processes enforces); the caller gives each
 * tenant's (limitsOf).
 */
export interface PluginLimits {
  /** Heap of the plugin's isolate (isolated-vm memoryLimit, at least 8). Default 16. */
  memoryMb: number;
  /**
   * CPU one entry into the isolate may use (apply, an event, a tool's execute up to its next await):
   * CPU time the process really spent on it (host/isolates/cpu.ts), so an entry that waits for a
   * core under load is not charged for the wait. Default 1000.
   */
  cpuMsPerCallback: number;
  /**
   * Wall clock one entry may hold the isolate, however little CPU it uses: the backstop for an entry
   * that neither finishes nor computes. Default 10 000.
   */
  callbackWallMs: number;
  /**
   * CPU the plugin may use over time, across all its entries: a bucket of this many ms that refills
   * at this many ms per minute, so a plugin that keeps every callback just under its budget still
   * cannot hold a core. Emptying it fails the plugin as `timeout`. Default 15 000 (a quarter of a core).
   */
  cpuMsPerMinute: number;
  /** Wall clock of one call of a plugin tool, the tool calls it awaits included. Default 30 000. */
  callWallMs: number;
  /** Wall clock of a start: loading the isolate and an async apply settling. Default 10 000. */
  startWallMs: number;
  /** Tools one plugin may have registered at once. Default 32. */
  maxTools: number;
  /** Inspection providers one plugin may have at once (ctx.inspect.provide). Default 8. */
  maxProviders: number;
  /** Methods of one inspection provider. Default 16. */
  maxProviderMethods: number;
  /** Tool calls of the agent's tools one plugin may have in flight. Default 16. */
  maxCallsInFlight: number;
  /** Messages one entry may send to the host (registrations, calls, results); more fails the plugin as `limit`. Default 1000. */
  maxMessagesPerCallback: number;
  /** Log lines one entry may write; later ones of that entry are dropped (and said so once). Default 100. */
  logLinesPerCallback: number;
  /** Longest log line kept (characters). Default 2000. */
  maxLogChars: number;
  /** Log lines kept per plugin (the newest). Default 200. */
  logRing: number;
  /** JSON size of a tool's arguments, result, a call's arguments or an event. Default 1 MiB. */
  maxValueBytes: number;
  /** Size of a package's host body (characters). Default 256 KiB. */
  maxCodeBytes: number;
  /** Plugins one agent may run (or start) at once. Default 16. */
  maxRunningPerAgent: number;
  /** Plugins one tenant's agents may run at once, together. Default 32. */
  maxRunningPerTenant: number;
  /** Heap limits (memoryMb) of one agent's running plugins, added up, in MB. Default 256. */
  maxMemoryMbPerAgent: number;
  /** Heap limits of one tenant's running plugins, added up, in MB. Default 512. */
  maxMemoryMbPerTenant: number;
  /**
   * Plugin worker processes of the tenant's own; the host may give it fewer, keeping some for
   * tenants that have none (processes.ts). Default 2.
   */
  maxWorkersPerTenant: number;
}

export const DEFAULT_PLUGIN_LIMITS: Readonly<PluginLimits> = Object.freeze({
  memoryMb: 16,
  cpuMsPerCallback: 1_000,
  callbackWallMs: 10_000,
  cpuMsPerMinute: 15_000,
  callWallMs: 30_000,
  startWallMs: 10_000,
  maxTools: 32,
  maxProviders: 8,
  maxProviderMethods: 16,
  maxCallsInFlight: 16,
  maxMessagesPerCallback: 1_000,
  logLinesPerCallback: 100,
  maxLogChars: 2_000,
  logRing: 200,
  maxValueBytes: 1024 * 1024,
  maxCodeBytes: 256 * 1024,
  maxRunningPerAgent: 16,
  maxRunningPerTenant: 32,
  maxMemoryMbPerAgent: 256,
  maxMemoryMbPerTenant: 512,
  maxWorkersPerTenant: 2,
});

/** A tool a running plugin registered; `execute` runs in the plugin's isolate. */
export interface PluginTool {
  pluginId: string;
  name: string;
  description: string;
  parameters: JsonSchema;
  /** The plugin declared that calls of this tool may overlap. */
  concurrencySafe: boolean;
  /**
   * Runs the plugin's execute. `callId` is the pipeline's id of this call: tool calls the plugin
   * makes through `exec.call` inside it arrive at callTool with it as `parentCallId`. Rejects with
   * a SandboxError: TOOL_FAILED (it threw), TOOL_TIMEOUT (callWallMs), ABORTED (signal, or the
   * plugin stopped or failed meanwhile).
   */
  execute(args: JsonValue, call: { callId: string; signal: AbortSignal }): Promise<JsonValue>;
}

/**
 * An inspection provider a running plugin registered (`ctx.inspect.provide(name, methods)`); its
 * methods run in the plugin's isolate, read-only by contract.
 */
export interface PluginProvider {
  pluginId: string;
  /** The provider's id (what cordis_inspect_query names). */
  name: string;
  description: string;
  methods: string[];
  /**
   * Runs one method with `input` (JSON) under the plugin's CPU and wall-clock budgets. Rejects with a
   * SandboxError: NOT_FOUND (no such method), TOOL_FAILED (it threw, or its result is not JSON or
   * too big), TOOL_TIMEOUT (callWallMs), ABORTED (signal, or the plugin stopped or failed meanwhile).
   */
  query(method: string, input: JsonValue, call: { callId: string; signal: AbortSignal }): Promise<JsonValue>;
}

/** Events of the agent a plugin may observe, read-only (`ctx.on(name, listener)`). A closed list. */
export const HOST_EVENTS = ['tools/result', 'tools/change'] as const;
export type HostEventName = (typeof HOST_EVENTS)[number];

/**
 * What one plugin may do outside its isolate, and nothing else. The caller (the agent service)
 * builds it per plugin: its registry, its pipeline with the plugin as provenance, its events.
 */
export interface PluginCapabilities {
  /**
   * Adds a tool to the agent's own scope and returns its disposer. Throw (with a message that says
   * why) to refuse it: the plugin then fails as `refused`.
   */
  registerTool(tool: PluginTool): () => void;
  /**
   * Calls one of the agent's visible tools as the agent, through the pipeline. `parentCallId` is
   * set when the plugin calls from inside one of its own tool calls. Throw to fail the call (the
   * plugin sees an error with the code of a SandboxError).
   */
  callTool(
    request: { name: string; args: JsonValue; parentCallId?: string },
    signal: AbortSignal,
  ): Promise<JsonValue>;
  /**
   * Adds an inspection provider to the agent and returns its disposer. Throw (saying why) to refuse
   * it: the plugin then fails as `refused`. Absent: the plugin's providers are refused.
   */
  provide?(provider: PluginProvider): () => void;
  /** Delivers the agent's events to the plugin; only called while the plugin listens to one. */
  subscribe?(listener: (name: HostEventName, data: JsonValue) => void): () => void;
}

export interface PluginLogLine {
  at: number;
  level: 'debug' | 'info' | 'success' | 'warn' | 'error';
  text: string;
}

/** What inspection shows of a plugin the runtime knows. */
export interface PluginStatus {
  pluginId: string;
  state: PluginState;
  /** The package loaded (running or starting), or that ran last. */
  packageId?: string;
  /** The plugin's `name` as its body declared it. */
  name?: string;
  /** Names of the tools it has registered now. */
  tools: string[];
  /** Ids of the inspection providers it provides now. */
  providers: string[];
  /** The last failure: why it failed (state failed), or why the last update did not happen (running). */
  error?: PluginFailure;
  /** The newest log lines, oldest first. */
  logs: PluginLogLine[];
  /** Log lines the plugin wrote that were not kept (over a per-callback budget or the ring). */
  droppedLogs: number;
  /** Times the plugin was started again after its process died under another plugin. */
  restarts: number;
}
