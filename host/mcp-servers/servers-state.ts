// One agent's MCP servers' state (servers.ts wires it): the entries (a runner per registered server,
// the tool definitions it gave and their disposers in the agent's scope), how a runner is made, a
// server's status, and the swap of a running server's tools when it lists others.
// Invariants: the scope holds exactly the tools of the current entries; a registration of a
// server's tools is whole or nothing (CONFLICT, none left behind); a swap that cannot be registered
// or persisted puts the previous tools back; `persist` always gets the whole list.
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
  /** Stores the whole list (and logs it); may reject, which undoes the change that called it. */
  persist: (records: McpServerRecord[]) => Promise<void>;
  /** Told when a restarted server's tools replaced its old ones (already persisted). */
  onChange?: () => void;
}

export interface Entry {
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
  /** False when there is no server of that name; resolves once the list without it is stored. */
  remove(name: string): Promise<boolean>;
  stopAll(): void;
}

/** One agent's MCP servers, shared by the parts. */
export interface ServersState {
  options: AgentMcpOptions;
  tools: AgentTools;
  limits: McpLimits;
  entries: Map<string, Entry>;
}

export function runnerFor(s: ServersState, spec: McpServerSpec): McpRunner {
  const { limits, options } = s;
  const runner: McpRunner = createMcpRunner({
    spec,
    limits,
    sandbox: options.sandbox,
    ...(options.remoteFetch === undefined ? {} : { remoteFetch: options.remoteFetch }),
    // refresh() settles every failure itself (the previous tools back): nothing to report here.
    onTools: (listed) => void refresh(s, spec.name, runner, listed).catch(() => undefined),
  });
  return runner;
}

export function register(s: ServersState, defs: McpDefinitions): Disposer[] {
  const disposers: Disposer[] = [];
  try {
    for (const definition of defs.definitions) disposers.push(s.tools.register(definition));
  } catch (error) {
    for (const dispose of disposers) dispose();
    throw new SandboxError('CONFLICT', `An MCP tool's name is taken in this agent: ${messageOf(error)}`, {
      cause: error,
    });
  }
  return disposers;
}

export function snapshot(s: ServersState): McpServerRecord[] {
  return [...s.entries.values()].map((e) => e.record);
}

export function statusOf(e: Entry): McpServerStatus {
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
export async function refresh(
  s: ServersState,
  name: string,
  runner: McpRunner,
  listed: McpToolInfo[],
): Promise<void> {
  const { options } = s;
  const e = s.entries.get(name);
  if (e === undefined || e.runner !== runner) return; // a registration in progress, or gone
  if (JSON.stringify(listed) === JSON.stringify(e.record.tools)) return;
  const defs = defineMcpTools(runner, listed);
  const previous = { defs: e.defs, disposers: e.disposers, record: e.record };
  for (const dispose of e.disposers) dispose();
  try {
    e.disposers = register(s, defs);
    e.defs = defs;
    e.record = { ...e.record, tools: listed };
    await options.persist(snapshot(s));
  } catch {
    for (const dispose of e.disposers) dispose();
    Object.assign(e, previous, { disposers: register(s, previous.defs) });
    return;
  }
  options.onChange?.();
}
