// The run_code tool itself: its parameters, its canonical value and its model-facing rendering,
// exactly as seed 003 words it. It is never registered (the name is reserved); the PTC executor
// hands it to the pipeline per batch with the program runner bound in (see executor.ts).
// Invariant: a failed run is a thrown CODE_RUN_FAILED whose message, after the pipeline's
// `Error: ` prefix, reads `Error: code run failed (<kind>): <message>[\nCaptured output:\n<lines>]`.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { type FailureKind, renderOutcome } from '../../isolates/index.ts';
import { toolAnnotations } from '../annotations.ts';
import { defineTool } from '../define.ts';
import { jsonText } from '../json-text.ts';
import { RESERVED_NAME } from '../layers.ts';
import type { ContentPart, ExecContext, JsonValue, ToolDefinition, ToolSchema } from '../types.ts';
import type { SubImage } from './bridge.ts';

export interface RunCodeArgs {
  /** The body of an async TypeScript function. */
  code: string;
  /** The model's short summary of what the code does. */
  description: string;
}

/** run_code's canonical value: what the program printed and what it returned (absent for undefined). */
export interface RunCodeValue {
  logs: string[];
  value?: JsonValue;
}

/** What run_code's body returns: the canonical value, and images kept out of it for the content. */
export type RunCodeBody = (
  args: RunCodeArgs,
  exec: ExecContext,
) => Promise<{ value: RunCodeValue; images: SubImage[] }>;

const base = defineTool({
  name: RESERVED_NAME,
  description: 'Run an async TypeScript function body with generated typed bindings for visible tools.',
  parameters: v.object({ code: v.string(), description: v.string() }),
  output: {
    // The value came out of JSON.parse in the isolate host, so it is JSON by construction.
    schema: v.object({ logs: v.array(v.string()), value: v.optional(v.custom<JsonValue>(() => true)) }),
    // The value goes in as jsonText's string: pretty-printing a deep value is quadratic (json-text.ts).
    render: (_args, { logs, value }) => [
      {
        type: 'text',
        text: renderOutcome({
          ok: true,
          logs,
          value: value === undefined || typeof value === 'string' ? value : jsonText(value),
        }),
      },
    ],
  },
  // The program itself touches nothing: each of its tools.* calls passes the pipeline (and plan
  // mode's guard) on its own.
  isReadOnly: () => true,
  // To a client, though, a program is whatever its calls do: it may write, delete and reach out.
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  execute: () => {
    throw new SandboxError('INTERNAL', 'run_code runs only through the PTC executor.');
  },
});

/** The one schema code mode shows, with the SDK-bearing description. */
export const runCodeSchema = (description: string): ToolSchema => ({
  name: RESERVED_NAME,
  description,
  parameters: base.parameters,
  annotations: toolAnnotations(base),
});

/** The message a failed run throws; the pipeline prefixes it with `Error: `. */
export const failureMessage = (kind: FailureKind, message: string, logs: readonly string[]): string =>
  renderOutcome({ ok: false, kind, message, logs: [...logs] }).slice('Error: '.length);

export const codeRunFailed = (kind: FailureKind, message: string, logs: readonly string[]): SandboxError =>
  new SandboxError('CODE_RUN_FAILED', failureMessage(kind, message, logs), { data: { kind } });

/** Attribution parts for image sub-results, appended after the outer result's text. */
export const imageContext = (images: readonly SubImage[], max: number): ContentPart[] => {
  const out: ContentPart[] = [];
  for (const image of images.slice(0, max)) {
    out.push({ type: 'text', text: `Image from ${image.tool} (call ${image.call}):` }, image.part);
  }
  if (images.length > max)
    out.push({
      type: 'text',
      text: `(${images.length - max} more images from tool calls were not attached)`,
    });
  return out;
};

/**
 * run_code for one batch: `body` runs the program. Images travel beside the value, keyed by the
 * call's frozen arguments object (the pipeline passes the same one to execute and projectContent).
 */
export const runCodeDefinition = (
  body: RunCodeBody,
  maxImages: number,
): ToolDefinition<RunCodeArgs, RunCodeValue> => {
  const images = new WeakMap<object, SubImage[]>();
  return Object.freeze({
    ...base,
    async execute(args: RunCodeArgs, exec: ExecContext): Promise<RunCodeValue> {
      const ran = await body(args, exec);
      if (ran.images.length > 0) images.set(args, ran.images);
      return ran.value;
    },
    projectContent(args: RunCodeArgs, _value: RunCodeValue, rendered: ContentPart[]): ContentPart[] {
      const found = images.get(args);
      return found === undefined ? rendered : [...rendered, ...imageContext(found, maxImages)];
    },
  });
};
