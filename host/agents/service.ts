// The agent service: create/get/list/delete agents per tenant, what each agent's model sees, and
// its call batches through the one pipeline. State: per-agent caches (tool scope, sandbox handle)
// rebuilt from the store on first use, so a restart loses nothing: agents and their remote tools
// live in store.agents (registrations are also logged, `agent.remote_tools`), sandboxes in
// the provider (re-adopted by agent id). Sandboxes are created lazily, when the first tool or file
// transfer needs one (tools get `services.sandbox` as a function), so creating an agent is a cheap
// store write and agents that only use remote tools never hold a container.
// Invariants: another tenant's agent reads as NOT_FOUND; results come back in call order.
// Deletion: once delete() has marked the agent deleted (synchronously, before its first await),
// nothing runs for it any more: its tool scope fails closed (every call, inner ones included, is
// DENIED), its batches are aborted, its host requests cancelled, its terminal sockets told, and no
// sandbox can be created for it (the creation path re-reads the store at the point of creation
// and waits for nothing a delete in progress could miss); the sandbox is destroyed last.
import { agentPolicies } from '../../policies/index.ts';
import { isSandboxError, messageOf, SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { Sandbox, SandboxProvider } from '../sandbox/types.ts';
import type { AgentRecord, Store } from '../store/index.ts';
import type { Disposer } from '../tools/disposer.ts';
import type { ToolRegistry } from '../tools/index.ts';
import type { AgentScope, ToolCall, ToolDefinition, ToolResult } from '../tools/types.ts';
import { createRequestSpawner, type SpawnProvider } from '../tools/workflow/index.ts';
import { DEFAULT_PRESET, defaultModeOf } from './presets/index.ts';
import { trackBatch } from './progress.ts';
import { defineRemoteTool } from './remote-tools.ts';
import { createRegistryRuntime } from './runtime.ts';
import { checkLimits, sandboxLimits } from './sandbox-limits.ts';
import type {
  Agent,
  AgentConfig,
  AgentTools,
  CallOptions,
  CreateAgentRequest,
  PresentationMode,
  Preset,
  RemoteToolSpec,
  ToolRuntime,
  ToolSurface,
} from './types.ts';

export interface AgentServiceOptions {
  store: Pick<Store, 'agents' | 'events' | 'requests'>;
  /** The tool registry (global layer holds the installed tools); adapted by createRegistryRuntime. */
  registry?: ToolRegistry;
  /** Overrides the registry adapter (tests, other runtimes). One of registry or runtime is required. */
  runtime?: ToolRuntime;
  sandboxes: SandboxProvider;
  /** Told about every settled root result (metrics); `remote` marks client-defined tool names. */
  observe?: (result: ToolResult, remote: boolean) => void;
  /**
   * Runs the subagents of agents created with `subagents: true` (workflow agent() steps).
   * Default: a `subagent` host request the client answers.
   */
  spawn?: SpawnProvider;
  now?: () => number;
  /**
   * How long delete() waits for the agent's aborted batches to settle before it destroys the
   * sandbox anyway (a body that ignores its signal loses the sandbox under it). Default 5000 ms.
   */
  deleteGraceMs?: number;
  /**
   * After a delete whose sandbox removal failed (an engine error), reapDeleted() runs again this
   * much later, so the sandbox does not wait for the next start. Default 30000 ms.
   */
  reapRetryMs?: number;
}

export interface AgentService {
  create(tenantId: string, input: CreateAgentRequest): Promise<Agent>;
  /** Throws NOT_FOUND for unknown, deleted or another tenant's agents. */
  get(tenantId: string, id: string): Agent;
  list(tenantId: string): Agent[];
  /**
   * Marks the agent deleted, then stops everything it started (batches, programs, workflows, host
   * requests, terminal sockets through onDeleted) and destroys its sandbox; resolves when done.
   */
  delete(tenantId: string, id: string): Promise<void>;
  /** Runs `listener` once when the agent is deleted; returns the unsubscriber. */
  onDeleted(agent: Agent, listener: () => void): () => void;
  tools(agent: Agent): Promise<ToolSurface>;
  call(agent: Agent, calls: ToolCall[], options: CallOptions): Promise<ToolResult[]>;
  /** The agent's sandbox, created on first use (or re-adopted after a restart). */
  sandbox(agent: Agent): Promise<Sandbox>;
  /** Adds or replaces client-executed tools; returns every remote tool name of the agent. */
  registerRemoteTools(agent: Agent, tools: RemoteToolSpec[]): Promise<string[]>;
  /** Sandboxes this process holds a handle to. */
  liveSandboxes(): number;
  inFlight(): number;
  /**
   * Removes the sandboxes of deleted agents whose delete did not get to finish (a crash or an engine
   * error between marking the agent deleted and removing its container); run once at start.
   * Resolves to the number removed; failures go to `onError` and are tried again at the next start.
   */
  reapDeleted(onError?: (agentId: string, error: unknown) => void): Promise<number>;
  /** Lets in-flight batches finish for `graceMs`, then aborts them (SHUTTING_DOWN); leaves sandboxes running. */
  close(graceMs?: number): Promise<void>;
}

interface Live {
  scope: AgentScope;
  tools: AgentTools;
  remote: Map<string, { spec: RemoteToolSpec; dispose: Disposer }>;
}

const toAgent = (record: AgentRecord): Agent => ({
  id: record.id,
  tenantId: record.tenantId,
  preset: record.preset as Preset,
  mode: record.mode as PresentationMode,
  sessionId: record.id,
  config: (record.config ?? {}) as AgentConfig,
  createdAt: record.createdAt,
});

const SHUTDOWN = 'SHUTTING_DOWN';
const DELETED = 'AGENT_DELETED';

const deletedError = (id: string): SandboxError =>
  new SandboxError('NOT_FOUND', `Agent ${id} was deleted.`, { data: { agentId: id } });

interface Batch {
  agentId: string;
  controller: AbortController;
  done: Promise<unknown>;
}

export const createAgentService = (options: AgentServiceOptions): AgentService => {
  const { store, sandboxes: provider } = options;
  const runtime = options.runtime ?? (options.registry ? createRegistryRuntime(options.registry) : undefined);
  if (runtime === undefined)
    throw new SandboxError('CONFIG_INVALID', 'createAgentService needs a registry (or a runtime).');
  const spawn =
    options.spawn ?? createRequestSpawner(store.requests, options.now ? { now: options.now } : {});
  const live = new Map<string, Live>();
  const sandboxes = new Map<string, Promise<Sandbox>>();
  const running = new Set<Batch>();
  /** Agents whose delete() is in progress in this process (the store already says deleted). */
  const deleting = new Set<string>();
  const deletionListeners = new Map<string, Set<() => void>>();
  const deleteGraceMs = options.deleteGraceMs ?? 5000;
  const reapRetryMs = options.reapRetryMs ?? 30_000;
  /** The pending retry of reapDeleted() after a failed removal (one at a time). */
  let reapRetry: NodeJS.Timeout | undefined;
  let closing = false;

  const retryReap = (): void => {
    if (reapRetry || closing) return;
    reapRetry = setTimeout(() => {
      reapRetry = undefined;
      void service.reapDeleted(() => retryReap()); // still failing: once more later
    }, reapRetryMs);
    reapRetry.unref();
  };

  /** Deleted here or by another process sharing the store. */
  const gone = (agent: Agent): boolean =>
    deleting.has(agent.id) || store.agents.get(agent.tenantId, agent.id) === undefined;

  const cancelRequests = (sessionId: string): void => {
    for (const request of store.requests.list(sessionId, 'pending')) store.requests.cancel(request.id);
  };

  const register = (state: Live, spec: RemoteToolSpec): void => {
    let definition: ToolDefinition;
    try {
      definition = defineRemoteTool(spec, store.requests, options.now);
    } catch (error) {
      throw new SandboxError('INVALID_ARGUMENTS', `Remote tool ${spec.name}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    state.remote.get(spec.name)?.dispose();
    state.remote.delete(spec.name);
    state.remote.set(spec.name, { spec, dispose: state.tools.register(definition) });
  };

  const liveOf = (agent: Agent): Live => {
    if (deleting.has(agent.id)) throw deletedError(agent.id);
    const existing = live.get(agent.id);
    if (existing !== undefined) return existing;
    const record = store.agents.get(agent.tenantId, agent.id);
    if (record === undefined) throw deletedError(agent.id);
    const scope: AgentScope = {
      id: agent.id,
      sessionId: agent.sessionId,
      services: {
        tenantId: agent.tenantId,
        sandbox: () => sandboxOf(agent),
        // Only an agent whose client runs subagents can spawn them (and so sees workflow and ralph).
        ...(agent.config.subagents === true ? { spawn } : {}),
      },
    };
    const tools = runtime.forAgent({
      agent: scope,
      preset: agent.preset,
      mode: agent.mode,
      own: [],
      ...(agent.config.restrict ? { restrict: agent.config.restrict } : {}),
      policies: agentPolicies(agent.config.policy),
    });
    const state: Live = { scope, tools, remote: new Map() };
    try {
      for (const spec of record.remoteTools as unknown as RemoteToolSpec[]) register(state, spec);
    } catch (error) {
      tools.dispose();
      throw error;
    }
    live.set(agent.id, state);
    return state;
  };

  /**
   * The agent's sandbox, created at most once per process. Race-free against delete(): the check
   * and the registration in `sandboxes` happen synchronously, so a delete either refuses this call
   * or finds the pending creation and waits for it before destroying; a creation that finishes
   * after the agent was deleted elsewhere destroys what it made.
   */
  const sandboxOf = (agent: Agent): Promise<Sandbox> => {
    if (deleting.has(agent.id)) return Promise.reject(deletedError(agent.id));
    let pending = sandboxes.get(agent.id);
    if (pending === undefined) {
      if (gone(agent)) return Promise.reject(deletedError(agent.id));
      pending = (async () => {
        const existing = await provider.get(agent.id);
        if (existing === undefined && gone(agent)) throw deletedError(agent.id);
        const sandbox =
          existing ??
          (await provider.create({
            tenantId: agent.tenantId,
            agentId: agent.id,
            limits: sandboxLimits(agent.config.sandbox),
          }));
        if (gone(agent)) {
          if (!deleting.has(agent.id)) await provider.destroy(agent.id).catch(() => undefined);
          throw deletedError(agent.id);
        }
        store.agents.setSandboxId(agent.id, sandbox.id);
        return sandbox;
      })();
      sandboxes.set(agent.id, pending);
      pending.catch(() => sandboxes.delete(agent.id));
    }
    return pending;
  };

  const service: AgentService = {
    async create(tenantId, input) {
      if (closing)
        throw new SandboxError(
          'SHUTTING_DOWN',
          'The service is shutting down; create the agent after it restarts.',
        );
      const preset = input.preset ?? DEFAULT_PRESET;
      const { preset: _p, mode: _m, ...config } = input;
      checkLimits(sandboxLimits(input.sandbox), provider.maxima);
      const record = store.agents.create({
        tenantId,
        preset,
        mode: input.mode ?? defaultModeOf(preset),
        config: config as JsonValue,
        remoteTools: (input.remoteTools ?? []) as unknown as JsonValue[],
      });
      const agent = toAgent(record);
      // Fail now, not at the first call: invalid remote tools or policy, a mode nobody can serve.
      try {
        await liveOf(agent).tools.describe();
      } catch (error) {
        store.agents.markDeleted(tenantId, agent.id);
        live.get(agent.id)?.tools.dispose();
        live.delete(agent.id);
        if (isSandboxError(error) && error.code === 'NO_EXECUTOR') {
          throw new SandboxError(
            'BAD_REQUEST',
            `Mode ${agent.mode} needs code mode (run_code), which this service was started without; use mode "native".`,
            { cause: error },
          );
        }
        throw error;
      }
      return agent;
    },

    get(tenantId, id) {
      const record = store.agents.get(tenantId, id);
      if (record === undefined)
        throw new SandboxError('NOT_FOUND', `No agent ${id}.`, { data: { agentId: id } });
      return toAgent(record);
    },

    list: (tenantId) => store.agents.list(tenantId).map(toAgent),

    async delete(tenantId, id) {
      const agent = service.get(tenantId, id);
      // Everything up to the first await is synchronous: from here on nothing new starts for it.
      if (!store.agents.markDeleted(tenantId, id)) throw deletedError(id);
      deleting.add(id);
      try {
        const state = live.get(id);
        live.delete(id);
        state?.tools.dispose(); // fails closed: any call still made through its scope is DENIED
        const listeners = deletionListeners.get(id);
        deletionListeners.delete(id);
        for (const listener of listeners ?? []) listener();
        const batches = [...running].filter((b) => b.agentId === id);
        for (const batch of batches) batch.controller.abort(DELETED);
        cancelRequests(agent.sessionId);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.all(batches.map((b) => b.done)),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, deleteGraceMs);
          }),
        ]);
        clearTimeout(timer);
        cancelRequests(agent.sessionId); // made by a body between the abort and its end
        const creating = sandboxes.get(id);
        sandboxes.delete(id);
        await creating?.catch(() => undefined);
        await provider.destroy(id).catch((e: unknown) => {
          retryReap();
          throw e;
        });
        // Only now: a delete that failed above leaves the id for reapDeleted() (retried, and at start).
        store.agents.setSandboxId(id, undefined);
      } finally {
        deleting.delete(id);
      }
    },

    async reapDeleted(onError) {
      let removed = 0;
      for (const record of store.agents.listAll({ includeDeleted: true })) {
        if (record.deletedAt === undefined || record.sandboxId === undefined) continue;
        try {
          await provider.destroy(record.id);
          store.agents.setSandboxId(record.id, undefined);
          removed++;
        } catch (e) {
          onError?.(record.id, e);
        }
      }
      return removed;
    },

    onDeleted(agent, listener) {
      if (gone(agent)) {
        listener();
        return () => {};
      }
      const set = deletionListeners.get(agent.id) ?? new Set<() => void>();
      deletionListeners.set(agent.id, set);
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && deletionListeners.get(agent.id) === set) deletionListeners.delete(agent.id);
      };
    },

    async tools(agent) {
      return { mode: agent.mode, tools: await liveOf(agent).tools.describe() };
    },

    async call(agent, calls, { signal, onProgress }) {
      if (closing)
        throw new SandboxError(
          'SHUTTING_DOWN',
          'The service is shutting down; retry the calls after it restarts.',
        );
      if (gone(agent)) throw deletedError(agent.id);
      const state = liveOf(agent);
      const controller = new AbortController();
      const onAbort = () => controller.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) controller.abort(signal.reason);
      const untrack = onProgress ? trackBatch(store.events, agent.sessionId, calls, onProgress) : undefined;
      const work = state.tools.execute(calls, controller.signal);
      const entry: Batch = { agentId: agent.id, controller, done: work.catch(() => undefined) };
      running.add(entry);
      try {
        let results = await work;
        if (controller.signal.reason === SHUTDOWN) results = results.map(shutdownResult);
        if (controller.signal.reason === DELETED) results = results.map(deletedResult);
        for (const result of results) options.observe?.(result, state.remote.has(result.name));
        return results;
      } finally {
        running.delete(entry);
        signal.removeEventListener('abort', onAbort);
        // Subscribers hear an event once its batch is written; let the batch's last ones through.
        if (untrack !== undefined) await store.events.flush().catch(() => undefined);
        untrack?.();
      }
    },

    sandbox: (agent) => sandboxOf(agent),

    async registerRemoteTools(agent, tools) {
      const state = liveOf(agent);
      const names = new Set<string>();
      for (const spec of tools) {
        if (names.has(spec.name))
          throw new SandboxError('INVALID_ARGUMENTS', `Remote tool ${spec.name} is listed twice.`);
        names.add(spec.name);
      }
      for (const spec of tools) register(state, spec);
      const all = [...state.remote.values()].map((r) => r.spec);
      if (!store.agents.setRemoteTools(agent.tenantId, agent.id, all as unknown as JsonValue[]))
        throw deletedError(agent.id);
      store.events.append([
        {
          sessionId: agent.sessionId,
          type: 'agent.remote_tools',
          surface: 'log-only',
          data: { tools: all as unknown as JsonValue },
        },
      ]);
      await store.events.flush();
      return all.map((s) => s.name);
    },

    liveSandboxes: () => sandboxes.size,
    inFlight: () => running.size,

    async close(graceMs = 10_000) {
      closing = true;
      clearTimeout(reapRetry);
      const all = Promise.all([...running].map((r) => r.done));
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([all, grace]);
      clearTimeout(timer);
      for (const r of running) r.controller.abort(SHUTDOWN);
      await all;
      for (const state of live.values()) state.tools.dispose();
      live.clear();
      await provider.close();
    },
  };

  const shutdownResult = (result: ToolResult): ToolResult => {
    const code = result.error?.code;
    if (code !== 'ABORTED' && code !== 'ABORTED_BEFORE_DISPATCH') return result;
    const message = 'The service shut down before this call finished; retry it after the restart.';
    return {
      ...result,
      content: [{ type: 'text', text: `Error: ${message}` }],
      error: { code: 'SHUTTING_DOWN', message },
    };
  };

  const deletedResult = (result: ToolResult): ToolResult => {
    const code = result.error?.code;
    if (code !== 'ABORTED' && code !== 'ABORTED_BEFORE_DISPATCH') return result;
    const message = 'The agent was deleted while this call ran; it was stopped.';
    return { ...result, content: [{ type: 'text', text: `Error: ${message}` }], error: { code, message } };
  };

  return service;
};
