// One agent's MCP servers: a runner per registered server and its tools in the agent's own scope.
// Installed from the stored records when the agent is loaded (the tools each server listed last, so
// nothing starts until a call needs it); `put` starts a server, lists its tools and only then
// replaces the one of that name; `remove` and `stopAll` end them. A server that lists other tools
// when it starts again (after a crash or a restart of the service) has its tools replaced and the
// new records persisted.
// Invariants: the scope holds exactly the tools of the current runners; a registration that fails
// (the server does not start, its tools cannot be registered, persisting fails) leaves the previous
// server of that name and its tools as they were; `persist` always gets the whole list.
import type { FetchLike } from '@modelcontextprotocol/client';
import type { AgentTools } from '../agents/types.ts';
import { messageOf, SandboxError } from '../errors.ts';
import type { Sandbox } from '../sandbox/types.ts';
import type { Disposer } from '../tools/disposer.ts';
import { createMcpRunner, type McpRunner } from './runner.ts';
import { defineMcpTools, type McpDefinitions } from './tools.ts';
import type { McpLimits, McpServerRecord, McpServerSpec, McpServerStatus, McpToolInfo } from './types.ts';

export interface AgentMcpOptions {
  tools: AgentTools;
  limits: McpLimits;
  sandbox: () => Promise<Sandbox>;
  /** Reaches remote (http) servers: the egress gateway's fetch for this agent. */
  remoteFetch?: FetchLike;
  /** Stores the whole list (and logs it); may throw, which undoes the change that called it. */
  persist: (records: McpServerRecord[]) => void;
  /** Told when a restarted server's tools replaced its old ones (already persisted). */
  onChange?: () => void;
}

interface Entry {
  record: McpServerRecord;
  runner: McpRunner;
  defs: McpDefinitions;
  disposers: Disposer[];
}

export interface AgentMcp {
  list(): McpServerStatus[];
  get(name: string): McpServerStatus | undefined;
  /** Starts the server, lists its tools and installs them (replacing one of the same name). */
  put(spec: McpServerSpec): Promise<McpServerStatus>;
  /** False when there is no server of that name. */
  remove(name: string): boolean;
  stopAll(): void;
}

export function installMcpServers(options: AgentMcpOptions, records: readonly McpServerRecord[]): AgentMcp {
  const { tools, limits } = options;
  const entries = new Map<string, Entry>();

  function runnerFor(spec: McpServerSpec): McpRunner {
    const runner: McpRunner = createMcpRunner({
      spec,
      limits,
      sandbox: options.sandbox,
      ...(options.remoteFetch === undefined ? {} : { remoteFetch: options.remoteFetch }),
      onTools: (listed) => refresh(spec.name, runner, listed),
    });
    return runner;
  }

  function register(defs: McpDefinitions): Disposer[] {
    const disposers: Disposer[] = [];
    try {
      for (const definition of defs.definitions) disposers.push(tools.register(definition));
    } catch (error) {
      for (const dispose of disposers) dispose();
      throw new SandboxError('CONFLICT', `An MCP tool's name is taken in this agent: ${messageOf(error)}`, {
        cause: error,
      });
    }
    return disposers;
  }

  function snapshot(): McpServerRecord[] {
    return [...entries.values()].map((e) => e.record);
  }

  function statusOf(e: Entry): McpServerStatus {
    const lastError = e.runner.lastError();
    const where =
      e.record.transport === 'http'
        ? { url: e.record.url, headers: Object.keys(e.record.headers ?? {}) }
        : { command: e.record.command };
    return {
      name: e.record.name,
      transport: e.record.transport,
      ...where,
      state: e.runner.state(),
      tools: e.defs.names,
      skipped: e.defs.skipped.first,
      skippedCount: e.defs.skipped.count,
      ...(e.defs.incomplete === undefined ? {} : { incomplete: e.defs.incomplete }),
      ...(lastError === undefined ? {} : { lastError }),
      restarts: e.runner.restarts(),
    };
  }

  /** A running server listed tools: when they differ from the installed ones, swap them. */
  function refresh(name: string, runner: McpRunner, listed: McpToolInfo[]): void {
    const e = entries.get(name);
    if (e === undefined || e.runner !== runner) return; // a registration in progress, or gone
    if (JSON.stringify(listed) === JSON.stringify(e.record.tools)) return;
    const defs = defineMcpTools(runner, listed);
    const previous = { defs: e.defs, disposers: e.disposers, record: e.record };
    for (const dispose of e.disposers) dispose();
    try {
      e.disposers = register(defs);
      e.defs = defs;
      e.record = { ...e.record, tools: listed };
      options.persist(snapshot());
    } catch {
      for (const dispose of e.disposers) dispose();
      Object.assign(e, previous, { disposers: register(previous.defs) });
      return;
    }
    options.onChange?.();
  }

  // Loaded from the store: the tools are known, the servers start at their first call.
  for (const record of records) {
    const runner = runnerFor(record);
    const defs = defineMcpTools(runner, record.tools);
    entries.set(record.name, { record, runner, defs, disposers: register(defs) });
  }

  async function put(spec: McpServerSpec): Promise<McpServerStatus> {
    const old = entries.get(spec.name);
    if (old === undefined && entries.size >= limits.maxServers)
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `This agent has ${entries.size} MCP servers, the most its tenant allows; remove one first.`,
      );
    const runner = runnerFor(spec);
    let listed: McpToolInfo[];
    try {
      listed = await runner.start();
    } catch (error) {
      runner.stop();
      throw error;
    }
    const defs = defineMcpTools(runner, listed);
    const record: McpServerRecord = { ...spec, tools: listed };
    const current = entries.get(spec.name);
    for (const dispose of current?.disposers ?? []) dispose();
    let disposers: Disposer[] = [];
    try {
      disposers = register(defs);
      entries.set(spec.name, { record, runner, defs, disposers });
      options.persist(snapshot());
    } catch (error) {
      for (const dispose of disposers) dispose();
      runner.stop();
      if (current) {
        entries.set(spec.name, { ...current, disposers: register(current.defs) });
      } else entries.delete(spec.name);
      throw error;
    }
    current?.runner.stop();
    return statusOf(entries.get(spec.name) as Entry);
  }

  function remove(name: string): boolean {
    const e = entries.get(name);
    if (e === undefined) return false;
    entries.delete(name);
    for (const dispose of e.disposers) dispose();
    try {
      options.persist(snapshot());
    } catch (error) {
      entries.set(name, { ...e, disposers: register(e.defs) });
      throw error;
    }
    e.runner.stop();
    return true;
  }

  function stopAll(): void {
    for (const e of entries.values()) e.runner.stop();
  }

  return {
    list: () => [...entries.values()].map(statusOf),
    get: (name) => {
      const e = entries.get(name);
      return e === undefined ? undefined : statusOf(e);
    },
    put,
    remove,
    stopAll,
  };
}
