// The generated `tools.*` SDK for a list of tool definitions, cached by content so that describing
// the surface and running a batch over the same tools generate it once. Keyed by each definition's
// name, description and schemas (in order), and by the run limits the description states, so a
// re-registered tool with the same schemas hits and a changed schema misses. Invariant: a hit
// returns exactly what generateSdk and runCodeDescription would return for the list and limits.
import { createHash } from 'node:crypto';
import {
  generateSdk,
  type NameBinding,
  type RunCodeLimits,
  runCodeDescription,
} from '../../../sdk-gen/index.ts';
import { RESERVED_NAME } from '../layers.ts';
import type { ToolDefinition } from '../types.ts';

export interface CodeModeSdk {
  /** run_code's model-facing description: instructions plus the generated declarations. */
  readonly description: string;
  /** `tools.<binding>` → real tool name, one entry per visible tool, in order. */
  readonly names: readonly NameBinding[];
}

export interface SdkCache {
  /** @param limits the run limits the description states; none: it states none. */
  get(definitions: readonly ToolDefinition[], limits?: RunCodeLimits): CodeModeSdk;
}

// Definitions are frozen by defineTool/defineJsonSchemaTool, so one key per object is enough. A
// definition's key is a small number standing for its content (name, description, schemas): the
// same content gets the same number while it is remembered, so a batch's lookup joins a few digits
// per tool instead of every schema's JSON (~60 µs per call over the default catalog). Numbers are
// never reused: forgetting the contents (past MAX_CONTENTS) only costs misses, never a wrong hit.
// The contents are remembered by their SHA-256, not their text: the map is the API process's,
// and an MCP server (the agent's own program) that lists new tools with ~1 MiB schemas again and
// again made it keep every one (400 distinct 200 KB tools: 73 MiB, up to MAX_CONTENTS of them).
const MAX_CONTENTS = 4096;
const contents = new Map<string, number>();
let nextContent = 0;
const keys = new WeakMap<ToolDefinition, number>();

const keyOf = (definition: ToolDefinition): number => {
  let key = keys.get(definition);
  if (key === undefined) {
    const content = JSON.stringify([
      definition.name,
      definition.description,
      definition.parameters,
      definition.outputSchema ?? null,
    ]);
    const digest = createHash('sha256').update(content).digest('base64');
    key = contents.get(digest);
    if (key === undefined) {
      if (contents.size >= MAX_CONTENTS) contents.clear();
      key = nextContent++;
      contents.set(digest, key);
    }
    keys.set(definition, key);
  }
  return key;
};

/** The definitions code mode turns into bindings: everything but run_code itself. */
export const bindableOf = (definitions: readonly ToolDefinition[]): ToolDefinition[] =>
  definitions.filter((definition) => definition.name !== RESERVED_NAME);

/**
 * The descriptions' characters the cache keeps at most: a description carries every tool's
 * declarations, and an MCP server's schemas may be large, so 32 of them alone are no bound.
 */
const MAX_DESCRIPTION_CHARS = 16 * 1024 * 1024;

/** @param size distinct tool lists kept (least recently used goes first). Default 32. */
export const createSdkCache = (size = 32): SdkCache => {
  const entries = new Map<string, CodeModeSdk>();
  let chars = 0;
  return {
    get(definitions, limits) {
      const tools = bindableOf(definitions);
      const key = `${JSON.stringify(limits ?? null)}\n${tools.map(keyOf).join(',')}`;
      const hit = entries.get(key);
      if (hit !== undefined) {
        entries.delete(key);
        entries.set(key, hit);
        return hit;
      }
      const sdk = generateSdk(
        tools.map((d) => ({
          name: d.name,
          description: d.description,
          parameters: d.parameters,
          output: d.outputSchema,
        })),
      );
      const entry: CodeModeSdk = Object.freeze({
        description: runCodeDescription(sdk.declarations, limits),
        names: Object.freeze(sdk.names.map((n) => Object.freeze({ ...n }))),
      });
      entries.set(key, entry);
      chars += entry.description.length;
      while (entries.size > 1 && (entries.size > size || chars > MAX_DESCRIPTION_CHARS)) {
        const oldest = entries.keys().next().value as string;
        chars -= entries.get(oldest)?.description.length ?? 0;
        entries.delete(oldest);
      }
      return entry;
    },
  };
};
