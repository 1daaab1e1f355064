// Public types of the SDK generator: the tool shape it reads, its options and its result.
// Types only; nothing here runs.

/**
 * A JSON Schema as tools declare it. Read defensively: schemas of remote and MCP tools are
 * untrusted input, so the generator checks every keyword's shape before using it.
 */
export type JSONSchema = boolean | { readonly [keyword: string]: unknown };

/** One visible tool, as the registry projects it for the model. */
export interface SdkTool {
  /** The real tool name; may be any string (MCP names such as `mcp__github__create-issue`). */
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: JSONSchema;
  /** JSON Schema of the canonical output value; without it the binding returns `unknown`. */
  output?: JSONSchema | undefined;
}

export interface GenerateOptions {
  /**
   * Schema nesting levels converted before a subschema becomes `unknown`. Each named type
   * (`$defs` entry) gets its own budget.
   * @default 8
   */
  maxDepth?: number;
  /**
   * Repeat each top-level argument's description as an `@param args.<name>` line in the
   * binding's JSDoc (the interface property carries it too).
   * @default true
   */
  paramTags?: boolean;
}

/** How a tool is reached from model code: `tools.<binding>(…)` calls the tool named `tool`. */
export interface NameBinding {
  tool: string;
  binding: string;
}

/** A tool whose schema could not be converted and fell back to `unknown`. */
export interface SdkDiagnostic {
  tool: string;
  /** `parameters` or `output`. */
  part: 'parameters' | 'output';
  message: string;
}

export interface GeneratedSdk {
  /** TypeScript declarations: named types, then `declare const tools: { … }`. */
  declarations: string;
  /** One entry per generated binding, in input order. */
  names: NameBinding[];
  /** Per-tool fallbacks; empty when every schema converted. */
  diagnostics: SdkDiagnostic[];
}
