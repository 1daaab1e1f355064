// defineJsonSchemaTool: tools that arrive with raw JSON Schema (remote tools, plugins, MCP). Their
// arguments and outputs are checked by @cfworker/json-schema, never by hand; the draft is taken from
// `$schema` (2020-12 when absent). Schemas are compiled once per definition.
import { Validator } from '@cfworker/json-schema';
import { SandboxError } from '../errors.ts';
import { renderValue } from './content.ts';
import { checkDefinitionBasics } from './define.ts';
import { resetMatchBudget, validationSchemaOf } from './safe-schema.ts';
import { instrument, overBudget, resetSteps } from './schema-budget.ts';
import type {
  ContentPart,
  ExecContext,
  JsonSchema,
  JsonValue,
  ToolAnnotations,
  ToolDefinition,
  ToolResult,
  Validation,
} from './types.ts';

type Draft = '4' | '7' | '2019-09' | '2020-12';

export interface JsonSchemaToolOptions {
  name: string;
  description: string;
  /** An object-rooted JSON Schema for the arguments. */
  parameters: JsonSchema;
  /** Output schema and renderer; without a schema any JSON value is accepted. */
  output?: {
    schema?: JsonSchema;
    render?: (args: Record<string, unknown>, value: JsonValue) => ContentPart[];
  };
  execute: (args: Record<string, unknown>, exec: ExecContext) => unknown;
  isConcurrencySafe?: (args: Record<string, unknown>) => boolean;
  /** Default: mutating (plan mode refuses it). */
  isReadOnly?: (args: Record<string, unknown>) => boolean;
  timeoutMs?: number;
  projectContent?: (
    args: Record<string, unknown>,
    value: JsonValue,
    rendered: ContentPart[],
  ) => ContentPart[];
  finalizeContent?: (
    args: Record<string, unknown>,
    content: ContentPart[],
    value: JsonValue,
  ) => ContentPart[];
  presentCall?: (args: Record<string, unknown>) => unknown;
  presentResult?: (args: Record<string, unknown>, result: ToolResult) => unknown;
  deferLoading?: boolean;
  /** MCP's hints (ToolDefinition.annotations); what is left out is derived. */
  annotations?: ToolAnnotations;
}

/** The validator draft named by a schema's `$schema`; 2020-12 when absent or unrecognised. */
export const detectDraft = (schema: JsonSchema): Draft => {
  const id = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (id.includes('draft-04')) return '4';
  if (id.includes('draft-06') || id.includes('draft-07')) return '7';
  if (id.includes('2019-09')) return '2019-09';
  return '2020-12';
};

const pointerPath = (location: string): string => {
  const path = location.replace(/^#\/?/, '').split('/').filter(Boolean).join('.');
  return path === '' ? '(root)' : path;
};

/** Compiles a schema into a validator that reports only the innermost failures, with paths. */
export const jsonSchemaValidator = <T>(schema: JsonSchema): ((input: unknown) => Validation<T>) => {
  // Every `pattern` runs on the linear-time engine within a budget, never by backtracking
  // (./safe-schema.ts): a schema's regex must not be able to stall the API's event loop, and nor
  // can its shape: every validation runs within a step budget (./schema-budget.ts).
  const safe = instrument(structuredClone(validationSchemaOf(schema, '(schema)')));
  const compiled = new Validator(safe as never, detectDraft(schema), false);
  return (input) => {
    resetMatchBudget();
    resetSteps();
    let result: ReturnType<typeof compiled.validate>;
    try {
      result = compiled.validate(input);
    } catch (error) {
      const why = overBudget(error);
      if (why === undefined) throw error;
      return { ok: false, issues: [`(root): ${why}`] };
    }
    if (result.valid) return { ok: true, value: input as T };
    // Aggregating keywords (properties, items, allOf …) repeat what their children already say.
    const leaves = result.errors.filter(
      (e) =>
        !result.errors.some(
          (other) => other !== e && other.keywordLocation.startsWith(`${e.keywordLocation}/`),
        ),
    );
    return { ok: false, issues: leaves.map((e) => `${pointerPath(e.instanceLocation)}: ${e.error}`) };
  };
};

const isJsonRoot = (value: unknown): boolean => {
  try {
    return JSON.stringify(value) !== undefined;
  } catch {
    return false;
  }
};

export const defineJsonSchemaTool = (
  options: JsonSchemaToolOptions,
): ToolDefinition<Record<string, unknown>, JsonValue> => {
  checkDefinitionBasics(options.name, options.description, options.timeoutMs);
  const params = options.parameters;
  if (
    typeof params !== 'object' ||
    params === null ||
    Array.isArray(params) ||
    (params.type !== undefined && params.type !== 'object')
  ) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${options.name} parameters must be an object-rooted JSON Schema ({ "type": "object", ... }).`,
    );
  }
  let validateArguments: ToolDefinition['validateArguments'];
  let checkOutput: ToolDefinition['validateOutput'] | undefined;
  try {
    validateArguments = jsonSchemaValidator<Record<string, unknown>>(params);
    checkOutput = options.output?.schema ? jsonSchemaValidator<JsonValue>(options.output.schema) : undefined;
  } catch (error) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Tool ${options.name} has a JSON Schema the validator cannot compile; fix the schema.`,
      { cause: error },
    );
  }
  const { $schema: _ignored, ...parameters } = params;
  const render = options.output?.render ?? ((_args: unknown, value: unknown) => renderValue(value));
  return Object.freeze({
    name: options.name,
    description: options.description,
    parameters: Object.freeze({ type: 'object', ...parameters }),
    outputSchema: options.output?.schema,
    validateArguments: (input: unknown) =>
      typeof input === 'object' && input !== null && !Array.isArray(input)
        ? validateArguments(input)
        : { ok: false as const, issues: ['(root): arguments must be a JSON object'] },
    validateOutput: (value: unknown): Validation<JsonValue> => {
      if (!isJsonRoot(value)) return { ok: false, issues: ['(root): output is not JSON-serialisable'] };
      return checkOutput ? checkOutput(value) : { ok: true, value: value as JsonValue };
    },
    render,
    execute: options.execute as ToolDefinition['execute'],
    isConcurrencySafe: options.isConcurrencySafe,
    isReadOnly: options.isReadOnly,
    timeoutMs: options.timeoutMs,
    projectContent: options.projectContent,
    finalizeContent: options.finalizeContent,
    presentCall: options.presentCall,
    presentResult: options.presentResult,
    deferLoading: options.deferLoading,
    annotations: options.annotations,
  });
};
