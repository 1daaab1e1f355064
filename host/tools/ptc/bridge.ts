// The bridge between one running program and the pipeline: `tools.<binding>(args)` in the isolate
// arrives here as onCall(binding, args) and re-enters the pipeline as an inner call of run_code
// (exec.callTool: validated, classified and scheduled by the pipeline's gate, policed, log-only,
// linked by parentCallId). A failed inner call is thrown as a SandboxError so the isolate host
// rebuilds it in the program with `.code`/`.message`.
// State: the successful image parts seen so far, to be appended after the outer result.
import { SandboxError } from '../../errors.ts';
import type { CallHandler, JsonValue } from '../../isolates/index.ts';
import type { ContentPart, ExecContext, ToolDefinition, ToolResult } from '../types.ts';
import type { CodeModeSdk } from './sdk-cache.ts';

/** One image part of a successful inner result, with what the model is told about its source. */
export interface SubImage {
  tool: string;
  /** The inner call's number within the program (1 = first call made). */
  call: number;
  part: Extract<ContentPart, { type: 'image' }>;
}

export interface ProgramBridge {
  readonly bindings: string[];
  readonly onCall: CallHandler;
  /** Image parts of successful inner calls, in call order. */
  images(): SubImage[];
}

/** What a successful inner call gives the program: its canonical value, else its text content. */
export const programValueOf = (result: ToolResult): JsonValue => {
  if (result.value !== undefined) return result.value;
  return result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
};

/** The call number from an inner id `<parent>.<n>` (see the pipeline's callTool). */
const callNumber = (parentId: string, innerId: string): number => {
  const n = Number(innerId.startsWith(`${parentId}.`) ? innerId.slice(parentId.length + 1) : Number.NaN);
  return Number.isSafeInteger(n) ? n : 0;
};

export const createBridge = (
  sdk: CodeModeSdk,
  definitions: readonly ToolDefinition[],
  exec: ExecContext,
): ProgramBridge => {
  const byName = new Map(definitions.map((d) => [d.name, d]));
  const toolOf = new Map<string, string>();
  for (const { tool, binding } of sdk.names) if (byName.has(tool)) toolOf.set(binding, tool);
  const images: SubImage[] = [];

  const onCall: CallHandler = async (binding, args, signal) => {
    const tool = toolOf.get(binding);
    if (tool === undefined)
      throw new SandboxError('UNKNOWN_TOOL', `tools.${binding} is not available in this program.`);
    if (signal.aborted)
      throw new SandboxError(
        'ABORTED_BEFORE_DISPATCH',
        `The call to ${tool} was cancelled before it started.`,
      );
    const result = await exec.callTool(tool, args, { signal });
    if (!result.ok) {
      const error = result.error ?? { code: 'TOOL_FAILED' as const, message: `${tool} failed.` };
      throw new SandboxError(error.code, error.message);
    }
    const call = callNumber(exec.callId, result.id);
    for (const part of result.content) if (part.type === 'image') images.push({ tool, call, part });
    return programValueOf(result);
  };

  return {
    bindings: [...toolOf.keys()],
    onCall,
    images: () => [...images].sort((a, b) => a.call - b.call),
  };
};
