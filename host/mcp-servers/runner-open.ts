// How a runner's program is opened: its transport (Streamable HTTP over the egress gateway's fetch,
// metered, for a remote server: RemoteTransport; SandboxStdioTransport in the agent's sandbox for a
// stdio one: both cut a server past its output budget or message size), the official
// SDK's Client connected over it, and its tools listed (listing.ts: bounded, checked in slices).
// A server's `notifications/tools/list_changed` makes it list its tools again (debounced), and
// onTools tells the owner.
// Invariants: everything of one open runs within the caller's deadline; a client that failed to
// connect has its transport closed; only the live session's list_changed is heard; output schemas
// are never run (noOutputValidation).
import { Client, type jsonSchemaValidator, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import * as v from 'valibot';
import { readListing } from './listing.ts';
import { RemoteTransport } from './remote-transport.ts';
import { failedError, type RunnerState, type Session, STDERR_TAIL } from './runner-state.ts';
import { SandboxStdioTransport } from './transport.ts';
import type { McpToolInfo } from './types.ts';

// The SDK's errors, for runner-start.ts's calls: it imports this module (and the SDK) lazily.
export { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';

/** A page of tools/list, its tools checked one by one afterwards (listing.ts). */
const ToolsPageShape = v.looseObject({
  tools: v.array(v.unknown()),
  nextCursor: v.optional(v.string()),
});

/**
 * Output schemas of a server's tools are not checked by the SDK: its default validator runs a
 * server's `pattern` with the backtracking engine on our one event loop. Structured content is
 * passed on as data, never trusted for anything.
 */
const noOutputValidation: jsonSchemaValidator = {
  getValidator: () => (input: unknown) => ({ valid: true, data: input as never, errorMessage: undefined }),
};

/** A message's JSON plus its framing and envelope, at most (a stdio line, a remote body or SSE event). */
const maxMessageBytes = (s: RunnerState): number => s.limits.maxResultBytes + 64 * 1024;

/**
 * A remote server's transport: Streamable HTTP over the gateway's fetch, its headers on every
 * request, what it sends metered; a server cut off past its budget ends like a stdio one (`ended`).
 */
function httpTransport(s: RunnerState, ended: (why: string) => void): RemoteTransport {
  const { spec, options } = s;
  if (spec.transport !== 'http') throw new Error('not a remote server');
  if (options.remoteFetch === undefined)
    throw failedError(spec.name, 'cannot be reached: this service has no egress gateway.');
  const sdk = {
    fetch: options.remoteFetch,
    requestInit: { headers: { ...spec.headers } },
    // Only redirects within the server's origin, each one re-checked by the gateway.
    redirectPolicy: 'same-origin',
    reconnectionOptions: {
      maxRetries: 2,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 10_000,
      reconnectionDelayGrowFactor: 2,
    },
  } as const;
  return new RemoteTransport(new URL(spec.url), sdk, {
    maxMessageBytes: maxMessageBytes(s),
    onCut: (why) => ended(`was stopped: ${why}`),
  });
}

async function stdioTransport(s: RunnerState, ended: (why: string) => void): Promise<SandboxStdioTransport> {
  const { spec } = s;
  if (spec.transport !== 'stdio') throw new Error('not a stdio server');
  const sandbox = await s.options.sandbox();
  if (sandbox.stdio === undefined)
    throw failedError(spec.name, 'cannot run: this sandbox provider runs no stdio programs.');
  s.stderr = '';
  const transport = new SandboxStdioTransport({
    stdio: sandbox.stdio,
    command: spec.command,
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    ...(spec.env === undefined ? {} : { env: spec.env }),
    maxMessageBytes: maxMessageBytes(s),
    onStderr: (chunk) => {
      s.stderr = (s.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    },
    onEnd: (end, why) =>
      ended(
        why !== undefined
          ? `was stopped: ${why}`
          : `ended: ${end.error?.message ?? (end.signal ? `killed by ${end.signal}` : `exit code ${String(end.exitCode)}`)}`,
      ),
  });
  return transport;
}

export async function open(s: RunnerState, ended: (why: string) => void, deadline: number): Promise<Session> {
  const { spec, limits } = s;
  const transport = spec.transport === 'http' ? httpTransport(s, ended) : await stdioTransport(s, ended);
  const client: Client = new Client(
    { name: 'dsh-sandbox', version: s.options.version ?? '0.1.0' },
    {
      capabilities: {},
      jsonSchemaValidator: noOutputValidation,
      // We list (paginated, bounded) ourselves; a server that keeps announcing is debounced.
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 1000,
          onChanged: () => {
            if (s.live?.client === client)
              listTools(s, client, Date.now() + limits.startTimeoutMs).catch(() => {});
          },
        },
      },
    },
  );
  client.onerror = () => {}; // malformed lines are skipped; a broken server shows in its calls
  try {
    await client.connect(transport, { timeout: Math.max(1, deadline - Date.now()) });
  } catch (error) {
    void transport.close();
    throw error;
  }
  return { client, transport };
}

/** Reads the listing within the tenant's bounds by `deadline`, and tells the owner. */
export async function listTools(s: RunnerState, client: Client, deadline: number): Promise<McpToolInfo[]> {
  const listing = await readListing(
    (cursor, timeout) =>
      client
        .request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ToolsPageShape, {
          timeout,
        })
        .catch((error: unknown) => {
          if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
            return 'timeout' as const;
          throw error;
        }),
    s.limits,
    deadline,
  );
  s.listedLast = listing;
  s.options.onTools?.(listing.tools);
  return listing.tools;
}
