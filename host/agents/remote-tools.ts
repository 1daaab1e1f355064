// Remote tools: tools whose body runs in the client. A call suspends as a `remote_tool` host
// request (host/requests/kinds/remote-tool.ts: visible in the events and in GET /requests), and
// resumes when the client answers `{ result }` or `{ error: { message } }`. Invariants: an
// unanswered request fails the call at its expiry (REQUEST_EXPIRED); an aborted call cancels its
// request; arguments are validated against the client's JSON Schema by @cfworker/json-schema before
// any request exists, with every `pattern` run on the linear-time engine
// (host/tools/safe-schema.ts), never by backtracking.
import type { JsonValue } from '../json.ts';
import { awaitRequest, type RequestStore, remoteToolKind } from '../requests/index.ts';
import { backstopTimeout } from '../tools/define.ts';
import { defineJsonSchemaTool } from '../tools/json-schema-tool.ts';
import { validationSchemaOf, withClientSchema } from '../tools/safe-schema.ts';
import type { ToolDefinition } from '../tools/types.ts';
import type { RemoteToolSpec } from './types.ts';

export const REMOTE_TOOL_TIMEOUT_MS = 300_000;
/** Remote tools one agent holds at once: in its create request, and after every registration. */
export const MAX_REMOTE_TOOLS = 128;

export const defineRemoteTool = (
  spec: RemoteToolSpec,
  requests: RequestStore,
  now: () => number = Date.now,
): ToolDefinition => {
  const tool = defineJsonSchemaTool({
    name: spec.name,
    description: spec.description,
    parameters: validationSchemaOf(spec.parameters, `remote tool ${spec.name}`),
    isConcurrencySafe: () => spec.concurrencySafe === true,
    isReadOnly: () => spec.readOnly === true,
    // The client runs it, wherever it likes.
    annotations: { openWorldHint: true },
    // The request's expiry answers first; the backstop ends a call whose expiry never fires.
    timeoutMs: backstopTimeout(spec.timeoutMs ?? REMOTE_TOOL_TIMEOUT_MS),
    execute: (args, exec) =>
      awaitRequest(
        requests,
        remoteToolKind,
        {
          sessionId: exec.agent.sessionId,
          callId: exec.callId,
          payload: { toolName: spec.name, arguments: args as JsonValue },
          ttlMs: spec.timeoutMs ?? REMOTE_TOOL_TIMEOUT_MS,
          now,
        },
        exec.signal,
      ),
  });
  return withClientSchema(tool, spec.parameters);
};
