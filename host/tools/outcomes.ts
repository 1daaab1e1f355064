// How failures are expressed: the one constructor of ToolError, the stock messages the model reads,
// and the mapping from anything thrown to a stable code (a SandboxError keeps its own; an abort
// keeps its SandboxError reason, else ABORTED; anything else is TOOL_FAILED with its message).
import { isSandboxError, messageOf } from '../errors.ts';
import { MAX_VALUE_DEPTH } from '../json.ts';
import type { Outcome } from './hooks.ts';
import type { ToolError } from './types.ts';

export const fail = (code: ToolError['code'], message: string, userReason?: string): ToolError =>
  userReason === undefined ? { code, message } : { code, message, userReason };

/** Structured detail for the log and the API (never the model): JSON-safe or dropped. */
const jsonData = (data: Record<string, unknown>): ToolError['data'] => {
  if (Object.keys(data).length === 0) return undefined;
  try {
    return JSON.parse(JSON.stringify(data)) as ToolError['data'];
  } catch {
    return undefined;
  }
};

export const unknownTool = (name: string): ToolError =>
  fail('UNKNOWN_TOOL', `Unknown tool "${name}"; call one of the tools listed for this agent.`);

/** A tool's result nested past MAX_VALUE_DEPTH (the pipeline's bound on every result's value). */
export const tooDeep = (name: string): ToolError =>
  fail(
    'TOOL_FAILED',
    `Tool ${name} returned a value that nests arrays or objects more than ${MAX_VALUE_DEPTH} levels deep; it was not used.`,
  );

export const beforeDispatch = (name: string): ToolError =>
  fail('ABORTED_BEFORE_DISPATCH', `The call to ${name} was cancelled before it started.`);

/** Maps anything a body or wrapper threw to structured detail; the signal tells cancellation apart. */
export const toToolError = (error: unknown, signal: AbortSignal, name: string): ToolError => {
  if (isSandboxError(error)) {
    const { userReason, ...rest } = error.data ?? {};
    const failure = fail(error.code, error.message, typeof userReason === 'string' ? userReason : undefined);
    const data = jsonData(rest);
    return data === undefined ? failure : { ...failure, data };
  }
  if (
    signal.aborted &&
    (error === signal.reason || (error instanceof Error && error.name === 'AbortError'))
  ) {
    const reason: unknown = signal.reason;
    if (isSandboxError(reason)) return fail(reason.code, reason.message);
    return fail('ABORTED', `Tool ${name} was cancelled.`);
  }
  return fail('TOOL_FAILED', messageOf(error));
};

export const failed = (error: ToolError): Outcome => ({ ok: false, error });
