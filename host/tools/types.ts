// The shared vocabulary of the tool runtime: what a call, a result, a definition and an execution
// context look like. Everything here is data or an interface; behaviour lives in the modules that
// use it. The result shape is what the API returns as-is, so it stays JSON-serialisable.
import type { ErrorCode } from '../errors.ts';
import type { JsonValue } from '../json.ts';

export type { JsonValue };

/** One piece of model-facing content. Images are base64 without a data: prefix. */
export type ContentPart = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

/** A JSON Schema document as it travels on the wire (model-facing or from a remote tool). */
export type JsonSchema = { [key: string]: unknown };

/** What the model sees of a tool: nothing else of a definition ever leaves the registry. */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: JsonSchema;
  /** Preserved from the definition so prompt assembly can defer loading; present only when true. */
  deferLoading?: true;
  /** What a client may assume about the tool (annotations.ts derives them); hints, never enforced. */
  annotations?: ToolAnnotations;
}

/**
 * MCP's tool hints, by MCP's names: readOnly (changes nothing a caller could notice outside the
 * agent's session state), destructive (may overwrite or delete, meaningful when not read-only),
 * idempotent (a repeat with the same arguments has no further effect), openWorld (reaches beyond
 * the agent's sandbox and session: the network, the client).
 */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A raw call as the model (or a client) emitted it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/** Structured failure detail; the model only ever sees `Error: <message>`. */
export interface ToolError {
  code: ErrorCode;
  message: string;
  /** A reason meant for a person (e.g. in an approval UI), never shown to the model. */
  userReason?: string;
  /** Structured detail from the failing layer (e.g. `{ kind: 'timeout' }` of a code run); API and log only. */
  data?: { [key: string]: JsonValue };
}

/** The settled outcome of one call, returned by the API as-is and written to the durable log. */
export interface ToolResult {
  id: string;
  name: string;
  ok: boolean;
  content: ContentPart[];
  /**
   * The canonical output value of a successful call (what code mode receives). When `redacted`,
   * it is non-enumerable: the call's own in-memory consumer (a program's `tools.*`, a plugin) still
   * reads it, but JSON (the API, the log) never carries it.
   */
  value?: JsonValue;
  error?: ToolError;
  durationMs: number;
  /**
   * A post-execute policy replaced the content and not the value: the value is withheld from
   * everything stored and served (the log keeps `redacted: true` instead).
   */
  redacted?: true;
  /** How many times the body ran, when a tools/execute wrapper retried it (absent: once or never). */
  attempts?: number;
}

/**
 * Host services a tool may use (e.g. `sandbox`). Filled by host/agents; host/tools never imports
 * their implementations. Owners add typed members by module augmentation of this interface.
 */
// biome-ignore lint/suspicious/noEmptyInterface: augmented by the modules that provide services
export interface ToolServices {}

/** The agent a call runs for, opaque to host/tools apart from these fields. */
export interface AgentScope {
  id: string;
  /** The session whose durable log receives this agent's call events. */
  sessionId: string;
  services: ToolServices & Record<string, unknown>;
}

/** The model choice captured for a step; conditions may use it to decide tool availability. */
export interface ModelSelection {
  provider?: string;
  model?: string;
  reasoningEffort?: string;
}

/**
 * Who made a call other than the model or the client directly: a plugin, for the calls its code
 * makes. Logged with the call (`data.provenance`), so the audit log says whose code made it.
 */
export type CallProvenance = { kind: 'plugin'; pluginId: string };

/** What a tool body receives besides its arguments. */
export interface ExecContext {
  /** Cooperative cancellation: every body must observe it. */
  signal: AbortSignal;
  callId: string;
  /** Set for inner calls made from a program, workflow or plugin. */
  parentCallId?: string;
  agent: AgentScope;
  /** The step's resolved tool set, applied to nested calls too. */
  toolSet?: ResolvedToolSetHandle;
  /**
   * Re-enters the pipeline as an inner call of this one: validated, policed and logged (log-only,
   * linked to this call). Concurrency-safe inner calls overlap; exclusive ones run alone.
   * `definition` runs that definition under `name` instead of a registry lookup (a workflow's
   * `agent()` step, which is no model-facing tool), as ExecutorBatch.run does for run_code.
   * `provenance` marks the inner call (and its own inner calls) as made by that code.
   */
  callTool(
    name: string,
    args: unknown,
    options?: { signal?: AbortSignal; definition?: ToolDefinition; provenance?: CallProvenance },
  ): Promise<ToolResult>;
}

/** The part of a resolved set that tool bodies may hold; the full type lives in resolved-set.ts. */
export interface ResolvedToolSetHandle {
  readonly disposed: boolean;
}

/** The outcome of checking arguments or an output value: the parsed value, or readable issues. */
export type Validation<T> = { ok: true; value: T } | { ok: false; issues: string[] };

/**
 * The runtime form of every tool, however it was defined (valibot or raw JSON Schema). The pipeline
 * only uses this shape; `defineTool` and `defineJsonSchemaTool` build it.
 */
// biome-ignore lint/suspicious/noExplicitAny: definitions of any argument type share one registry; `unknown` would make execute() contravariant-incompatible
export interface ToolDefinition<Args = any, Value = any> {
  readonly name: string;
  readonly description: string;
  /** Model-facing JSON Schema of the arguments, computed once. */
  readonly parameters: JsonSchema;
  readonly outputSchema?: JsonSchema;
  validateArguments(input: unknown): Validation<Args>;
  validateOutput(value: unknown): Validation<Value>;
  render(args: Args, value: Value): ContentPart[];
  execute(args: Args, exec: ExecContext): Value | Promise<Value>;
  /** True lets this call overlap with sibling safe calls. Absent or throwing means exclusive. */
  isConcurrencySafe?(args: Args): boolean;
  /**
   * True declares that this call changes nothing outside the agent's session state (no file, no
   * process, nothing in the client): plan mode lets it run. Absent or throwing means it mutates.
   */
  isReadOnly?(args: Args): boolean;
  /**
   * The paths (as the call names them, relative to the workspace or absolute) this call creates,
   * replaces or edits, for guards that confine writes (team tasks' write scopes). Declared only
   * by tools that write files by path; a mutating tool without it writes where it likes (a shell).
   */
  writePaths?(args: Args): string[];
  /** Declarative only: enforced by the timeout policy (a tools/execute wrapper). */
  readonly timeoutMs?: number;
  /** Execution-prepared content, installed before post-execute policies. */
  projectContent?(args: Args, value: Value, rendered: ContentPart[]): ContentPart[];
  /** The last content transform of a successful call, after post-execute policies. */
  finalizeContent?(args: Args, content: ContentPart[], value: Value): ContentPart[];
  /** Pure presenters for host-local UI consumers; never sent to the model. */
  presentCall?(args: Args): unknown;
  presentResult?(args: Args, result: ToolResult): unknown;
  readonly deferLoading?: boolean;
  /** Declared hints; what is not declared annotations.ts derives (isReadOnly and defaults). */
  readonly annotations?: ToolAnnotations;
}

/** Presentation mode: which surface the model sees and calls. */
export type PresentationMode = 'native' | 'code' | 'both';

export const PRESENTATION_MODES: readonly PresentationMode[] = ['native', 'code', 'both'];
