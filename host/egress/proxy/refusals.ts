// How the proxy refuses: a failure read as the client will see it (the gateway's code as a status:
// 403 denied, 429 budget, 408 no request in time, 400 malformed, else 502), with `X-Dsh-Egress`
// saying which and why and the gateway's message as the body, on an HTTP response or, for a socket
// that is no longer the HTTP server's, as raw bytes.
// Invariants: a reason is header-safe (printable ASCII, no quote, at most 200 characters); a
// refusal closes the connection; a response already under way is destroyed, never appended to.
import type { ServerResponse } from 'node:http';
import { SandboxError } from '../../errors.ts';

export interface Refusal {
  status: number;
  kind: string;
  reason: string;
  message: string;
}

/** How a failure reads to the client: the gateway's code as a status, its reason and message. */
export function refusalOf(error: unknown): Refusal {
  if (error instanceof SandboxError) {
    const reason = String(error.data?.reason ?? error.code);
    if (error.code === 'EGRESS_DENIED')
      return { status: 403, kind: 'denied', reason, message: error.message };
    if (error.code === 'EGRESS_BUDGET_EXCEEDED')
      return { status: 429, kind: 'budget', reason, message: error.message };
    return { status: 502, kind: 'failed', reason, message: error.message };
  }
  return { status: 502, kind: 'failed', reason: 'internal error', message: 'The egress gateway failed.' };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  429: 'Too Many Requests',
};

/** A whole HTTP/1.1 answer as bytes (for a socket that is no longer the HTTP server's). */
export function rawRefusal(r: Refusal): string {
  const body = `${r.message}\n`;
  return (
    `HTTP/1.1 ${r.status} ${STATUS_TEXT[r.status] ?? 'Bad Gateway'}\r\n` +
    `X-Dsh-Egress: ${r.kind}; reason="${headerSafe(r.reason)}"\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}

const headerSafe = (s: string): string => s.replace(/[^\x20-\x7e]|"/g, '?').slice(0, 200);

export function refuse(res: ServerResponse, r: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${r.message}\n`;
  res.writeHead(r.status, {
    'x-dsh-egress': `${r.kind}; reason="${headerSafe(r.reason)}"`,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

export const badRequest = (message: string): Refusal => ({
  status: 400,
  kind: 'bad-request',
  reason: 'malformed',
  message,
});
