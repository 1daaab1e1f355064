// Remote tools: tools whose body runs in the client. A call suspends as a `remote_tool` host
// request (visible in the events and in GET /requests), and resumes when the client answers
// `{ result }` or `{ error: { message } }`. Invariants: an unanswered request fails the call at
// its expiry (REQUEST_EXPIRED); an aborted call cancels its request; arguments are validated
// against the client's JSON Schema by @cfworker/json-schema before any request exists, with every
// `pattern` run on the linear-time engine (host/tools/safe-schema.ts), never by backtracking.
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import { awaitRequest } from '../store/await-request.ts';
import type { RequestStore } from '../store/types.ts';
import { defineJsonSchemaTool } from '../tools/json-schema-tool.ts';
import { validationSchemaOf, withClientSchema } from '../tools/safe-schema.ts';
import type { ToolDefinition } from '../tools/types.ts';
import type { RemoteToolSpec } from './types.ts';

export const REMOTE_TOOL_TIMEOUT_MS = 300_000;

const readAnswer = (name: string, answer: JsonValue | undefined): JsonValue => {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    throw new SandboxError(
      'TOOL_FAILED',
      `The client answered the ${name} call with something other than { result } or { error }.`,
    );
  }
  if (answer.error !== undefined) {
    const error = answer.error;
    const message =
      typeof error === 'string'
        ? error
        : typeof error === 'object' &&
            error !== null &&
            !Array.isArray(error) &&
            typeof error.message === 'string'
          ? error.message
          : `${name} failed in the client`;
    throw new SandboxError('TOOL_FAILED', message);
  }
  return answer.result ?? null;
};

export const defineRemoteTool = (
  spec: RemoteToolSpec,
  requests: RequestStore,
  now: () => number = Date.now,
): ToolDefinition => {
  const ttl = spec.timeoutMs ?? REMOTE_TOOL_TIMEOUT_MS;
  const tool = defineJsonSchemaTool({
    name: spec.name,
    description: spec.description,
    parameters: validationSchemaOf(spec.parameters, `remote tool ${spec.name}`),
    isConcurrencySafe: () => spec.concurrencySafe === true,
    async execute(args, exec) {
      exec.signal.throwIfAborted();
      const settled = await awaitRequest(
        requests,
        {
          sessionId: exec.agent.sessionId,
          kind: 'remote_tool',
          callId: exec.callId,
          payload: { toolName: spec.name, arguments: args as JsonValue },
          expiresAt: now() + ttl,
        },
        exec.signal,
      );
      if (settled.state === 'answered') return readAnswer(spec.name, settled.answer);
      if (settled.state === 'expired') {
        throw new SandboxError(
          'REQUEST_EXPIRED',
          `The client did not answer the ${spec.name} call within ${ttl} ms.`,
        );
      }
      throw new SandboxError('ABORTED', `The ${spec.name} call was cancelled before the client answered.`);
    },
  });
  return withClientSchema(tool, spec.parameters);
};
