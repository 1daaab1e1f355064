// A tool's MCP hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint), derived from
// its definition: what the definition declares wins; otherwise a tool whose isReadOnly holds for
// any arguments (probed with none) is read-only, idempotent and not destructive; a tool that may
// mutate is destructive and not idempotent. openWorldHint defaults to false for a read-only tool
// (it reads the agent's own workspace or session) and true for one that mutates (a shell reaches
// the network through egress); tools that read the web declare it.
// Invariant: always all four hints, so a client never falls back to MCP's defaults for a tool of ours.
import type { ToolAnnotations, ToolDefinition } from './types.ts';

/** True when the definition is read-only whatever the arguments (a probe with none; a throw is false). */
const alwaysReadOnly = (definition: ToolDefinition): boolean => {
  try {
    return definition.isReadOnly?.({}) === true;
  } catch {
    return false;
  }
};

export function toolAnnotations(definition: ToolDefinition): Required<ToolAnnotations> {
  const declared = definition.annotations ?? {};
  const readOnlyHint = declared.readOnlyHint ?? alwaysReadOnly(definition);
  return {
    readOnlyHint,
    destructiveHint: readOnlyHint ? false : (declared.destructiveHint ?? true),
    idempotentHint: declared.idempotentHint ?? readOnlyHint,
    openWorldHint: declared.openWorldHint ?? !readOnlyHint,
  };
}
