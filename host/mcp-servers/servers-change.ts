// A change of one agent's MCP servers: `put` starts a server, lists its tools and only then
// replaces the one of that name; `remove` ends one.
// Invariants: a registration that fails (the server does not start, its tools cannot be
// registered, persisting fails) leaves the previous server of that name and its tools as they
// were, and stops the new runner; a removal that cannot be persisted is undone; at most
// limits.maxServers servers.
import { SandboxError } from '../errors.ts';
import type { Disposer } from '../tools/disposer.ts';
import { type Entry, register, runnerFor, type ServersState, snapshot, statusOf } from './servers-state.ts';
import { defineMcpTools } from './tools.ts';
import type { McpServerRecord, McpServerSpec, McpServerStatus, McpToolInfo } from './types.ts';

export async function put(s: ServersState, spec: McpServerSpec): Promise<McpServerStatus> {
  const { entries, limits, options } = s;
  const old = entries.get(spec.name);
  if (old === undefined && entries.size >= limits.maxServers)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This agent has ${entries.size} MCP servers, the most its tenant allows; remove one first.`,
    );
  const runner = runnerFor(s, spec);
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
    disposers = register(s, defs);
    entries.set(spec.name, { record, runner, defs, disposers });
    await options.persist(snapshot(s));
  } catch (error) {
    for (const dispose of disposers) dispose();
    runner.stop();
    if (current) {
      entries.set(spec.name, { ...current, disposers: register(s, current.defs) });
    } else entries.delete(spec.name);
    throw error;
  }
  current?.runner.stop();
  return statusOf(entries.get(spec.name) as Entry);
}

export async function remove(s: ServersState, name: string): Promise<boolean> {
  const { entries, options } = s;
  const e = entries.get(name);
  if (e === undefined) return false;
  entries.delete(name);
  for (const dispose of e.disposers) dispose();
  try {
    await options.persist(snapshot(s));
  } catch (error) {
    entries.set(name, { ...e, disposers: register(s, e.defs) });
    throw error;
  }
  e.runner.stop();
  return true;
}
