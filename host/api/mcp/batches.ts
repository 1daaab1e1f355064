// JSON-RPC batches (one POST carrying an array of messages) on the agents' MCP endpoints, by the MCP
// revision the request is spoken in. Batches were added in 2025-03-26 and removed in 2025-06-18
// ("Remove support for JSON-RPC batching"); 2026-07-28 has none either. The endpoint is stateless,
// so the revision is the MCP-Protocol-Version header, which 2025-06-18 and later clients send on
// every request after initialize; without one, the transport spec says to assume 2025-03-26.
// So a batch is refused (JSON-RPC -32600) unless it is spoken in 2025-03-26, and there it holds at
// most MAX_CALLS_PER_BATCH messages, the cap of a POST /calls batch: one request never starts more
// calls at once than /calls would (the SDK's own cap is 100). Items refused before the SDK (their
// params, ./params.ts) are answered in the same answer as the rest: withAnswers adds them.

import { MAX_CALLS_PER_BATCH } from '../schemas.ts';

/** The one revision whose JSON-RPC admits batches. */
const BATCHING_REVISION = '2025-03-26';

/** Why a POST body is refused as a batch, or undefined when it is not a batch or is admitted. */
export function batchRefusal(body: unknown, protocolVersion: string | undefined): string | undefined {
  if (!Array.isArray(body)) return undefined;
  const revision = protocolVersion?.trim() || BATCHING_REVISION;
  if (revision !== BATCHING_REVISION)
    return `Invalid Request: MCP ${revision.slice(0, 32)} has no JSON-RPC batches (only ${BATCHING_REVISION} had them); send each message in a POST of its own.`;
  if (body.length > MAX_CALLS_PER_BATCH)
    return `Invalid Request: a JSON-RPC batch holds at most ${MAX_CALLS_PER_BATCH} messages, like a POST /calls batch; this one has ${body.length}.`;
  return undefined;
}

const encoder = new TextEncoder();

/**
 * The SDK's answer to the rest of a batch with `answers` (JSON-RPC responses made here) added: to
 * its JSON array, as SSE events after its own, or alone as a JSON array when the SDK answered
 * nothing (the rest were notifications) or there was no rest.
 */
export async function withAnswers(
  response: Response | undefined,
  answers: readonly unknown[],
): Promise<Response> {
  if (response === undefined || response.status === 202 || response.body === null)
    return Response.json(answers, { status: 200 });
  // A refusal of the whole request (its headers, say) is the answer as it is.
  if (answers.length === 0 || !response.ok) return response;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  if ((headers.get('content-type') ?? '').startsWith('application/json')) {
    const own: unknown = await response.json();
    return Response.json([...(Array.isArray(own) ? own : [own]), ...answers], { status: 200, headers });
  }
  const tail = answers.map((a) => `event: message\ndata: ${JSON.stringify(a)}\n\n`).join('');
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      flush(controller) {
        controller.enqueue(encoder.encode(tail));
      },
    }),
  );
  return new Response(body, { status: response.status, headers });
}
