// defineTool: typed tool definitions from valibot schemas. The model-facing JSON Schema is computed
// once here; arguments are parsed with valibot (so transforms and defaults apply) and the body is
// typed from the schema's output. Invalid definitions fail here, not at the first call.
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import { renderValue, type WithContent } from './content.ts';
import type {
  ContentPart,
  ExecContext,
  JsonSchema,
  ToolAnnotations,
  ToolDefinition,
  ToolResult,
  Validation,
} from './types.ts';

/**
 * How long past its own deadline a tool that can hang is given before the timeout policy ends the
 * call (TOOL_TIMEOUT): the body's deadline (a command's timeout, a wait, a request's expiry) answers
 * first; the declared `timeoutMs` is the backstop for a sandbox, server or client that never does.
 */
export const TIMEOUT_GRACE_MS = 30_000;

/** The `timeoutMs` a tool whose own deadline is `ms` declares. */
export const backstopTimeout = (ms: number): number => ms + TIMEOUT_GRACE_MS;

type ObjectSchema =
  | v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>
  | v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>
  | v.LooseObjectSchema<v.ObjectEntries, v.ErrorMessage<v.LooseObjectIssue> | undefined>;
type AnySchema = v.GenericSchema;
type Output<V> = V | WithContent<V>;

export interface ToolOptions<P extends ObjectSchema, O extends AnySchema> {
  /** Model-facing name: letters, digits, `_` and `-`, at most 128 characters. */
  name: string;
  description: string;
  /** A valibot object schema; its JSON Schema is what the model sees. */
  parameters: P;
  output: {
    schema: O;
    /** Default: a string value as text, any other value as pretty-printed JSON. */
    render?: (args: v.InferOutput<P>, value: v.InferOutput<O>) => ContentPart[];
  };
  /** Returns the value, or withContent(value, content) when it renders its own content (content.ts). */
  execute: (
    args: v.InferOutput<P>,
    exec: ExecContext,
  ) => Output<v.InferInput<O>> | Promise<Output<v.InferInput<O>>>;
  /** Default: exclusive. Return true only when overlapping siblings is safe for these arguments. */
  isConcurrencySafe?: (args: v.InferOutput<P>) => boolean;
  /** Default: mutating. Return true only when the call changes nothing outside the session state. */
  isReadOnly?: (args: v.InferOutput<P>) => boolean;
  /** The file paths the call writes (ToolDefinition.writePaths); absent for tools that write none by path. */
  writePaths?: (args: v.InferOutput<P>) => string[];
  /** Declared deadline; enforced only when the timeout policy is installed. */
  timeoutMs?: number;
  projectContent?: (
    args: v.InferOutput<P>,
    value: v.InferOutput<O>,
    rendered: ContentPart[],
  ) => ContentPart[];
  finalizeContent?: (
    args: v.InferOutput<P>,
    content: ContentPart[],
    value: v.InferOutput<O>,
  ) => ContentPart[];
  presentCall?: (args: v.InferOutput<P>) => unknown;
  presentResult?: (args: v.InferOutput<P>, result: ToolResult) => unknown;
  deferLoading?: boolean;
  /** MCP's hints (ToolDefinition.annotations); what is left out is derived. */
  annotations?: ToolAnnotations;
}

const NAME = /^[A-Za-z0-9_-]{1,128}$/;

/** A tool name as registration requires it, for requests that name tools (restrictions, policies). */
export const ToolName = v.pipe(v.string(), v.regex(NAME, 'tool names are 1-128 letters, digits, "_" or "-"'));

/** Checks what every definition shares; throws CONFIG_INVALID with the fix. */
export const checkDefinitionBasics = (name: unknown, description: unknown, timeoutMs: unknown): void => {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool name ${JSON.stringify(name)} is invalid; use 1-128 letters, digits, "_" or "-".`,
    );
  }
  if (typeof description !== 'string' || description.length === 0) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${name} needs a non-empty description; the model chooses tools by it.`,
    );
  }
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0)
  ) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${name} has timeoutMs ${String(timeoutMs)}; use a positive number of milliseconds.`,
    );
  }
};

/** `path.to.field: message` for each issue, `(root)` when the issue is about the whole value. */
export const valibotIssues = (issues: readonly v.BaseIssue<unknown>[]): string[] =>
  issues.map((issue) => `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`);

const validator =
  <T>(schema: AnySchema): ((input: unknown) => Validation<T>) =>
  (input) => {
    const result = v.safeParse(schema, input);
    return result.success
      ? { ok: true, value: result.output as T }
      : { ok: false, issues: valibotIssues(result.issues) };
  };

const modelSchema = (schema: AnySchema, name: string, strict = true): JsonSchema => {
  try {
    const json = toJsonSchema(schema, {
      errorMode: strict ? 'throw' : 'ignore',
      // A transform (./whole-number.ts) changes an accepted value; it does not narrow what is accepted.
      overrideAction: ({ valibotAction, jsonSchema }) =>
        valibotAction.type === 'transform' ? jsonSchema : undefined,
    }) as JsonSchema;
    delete json.$schema;
    return json;
  } catch (error) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${name} has a schema that cannot be shown to the model as JSON Schema; use plain valibot types.`,
      { cause: error },
    );
  }
};

/**
 * v.object strips unknown keys and v.strictObject refuses them; to the model both say
 * `additionalProperties: false`, which the pipeline enforces with a message naming the valid
 * arguments (./arguments.ts). v.looseObject stays open.
 */
const closed = (parameters: ObjectSchema, json: JsonSchema): JsonSchema =>
  parameters.type === 'loose_object' ? json : { ...json, additionalProperties: false };

export const defineTool = <P extends ObjectSchema, O extends AnySchema>(
  options: ToolOptions<P, O>,
): ToolDefinition<v.InferOutput<P>, v.InferOutput<O>> => {
  checkDefinitionBasics(options.name, options.description, options.timeoutMs);
  const kinds = ['object', 'strict_object', 'loose_object'];
  if (!kinds.includes((options.parameters as { type?: string }).type ?? '')) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${options.name} parameters must be a valibot object schema (v.object({...})).`,
    );
  }
  const render = options.output.render ?? ((_args: unknown, value: unknown) => renderValue(value));
  return Object.freeze({
    name: options.name,
    description: options.description,
    parameters: Object.freeze(closed(options.parameters, modelSchema(options.parameters, options.name))),
    outputSchema: modelSchema(options.output.schema, options.name, false),
    validateArguments: validator<v.InferOutput<P>>(options.parameters),
    validateOutput: validator<v.InferOutput<O>>(options.output.schema),
    render,
    execute: options.execute as ToolDefinition['execute'],
    isConcurrencySafe: options.isConcurrencySafe,
    isReadOnly: options.isReadOnly,
    writePaths: options.writePaths,
    timeoutMs: options.timeoutMs,
    projectContent: options.projectContent,
    finalizeContent: options.finalizeContent,
    presentCall: options.presentCall,
    presentResult: options.presentResult,
    deferLoading: options.deferLoading,
    annotations: options.annotations,
  });
};
