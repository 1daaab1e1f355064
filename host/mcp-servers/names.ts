// Model-facing names of MCP tools: `mcp__<server>__<tool>` (the convention most harnesses use), every
// character outside [A-Za-z0-9_-] replaced by `_`, at most 64 characters (the tightest limit of the
// major model APIs). A name that would be longer keeps its start and ends in `_` plus 8 hex of a
// hash of the server's own tool name, so two long names that share a start stay apart.
// Invariant: within one server, a NameMap maps each model-facing name to exactly one tool; a tool
// whose name would collide with an earlier one is refused, never silently shadowed.
import { createHash } from 'node:crypto';

export const MAX_TOOL_NAME = 64;
export const SERVER_NAME = /^[A-Za-z0-9-]{1,32}$/;

export function mcpToolName(server: string, tool: string): string {
  const clean = `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (clean.length <= MAX_TOOL_NAME && tool.length > 0) return clean;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${clean.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
}

/** Model-facing name → the server's tool name, refusing collisions. */
export class NameMap {
  readonly #byName = new Map<string, string>();
  readonly server: string;
  constructor(server: string) {
    this.server = server;
  }

  /** The model-facing name of `tool`, or the tool it collides with. */
  add(tool: string): { name: string } | { collidesWith: string } {
    const name = mcpToolName(this.server, tool);
    const other = this.#byName.get(name);
    if (other !== undefined) return { collidesWith: other };
    this.#byName.set(name, tool);
    return { name };
  }

  toolOf(name: string): string | undefined {
    return this.#byName.get(name);
  }
}
