// The bounds of the lsp tool's language servers, and where they run.
// Invariants: every query, the server's start included, has a deadline (queryTimeoutMs); every
// message from a server is capped (maxMessageBytes).

export const WORKSPACE = '/workspace';

export interface LspLimits {
  /** Largest message a server may send, in bytes. */
  maxMessageBytes: number;
  /** How long one query (the server's start included) may take. */
  queryTimeoutMs: number;
  /** A server without a query for this long is stopped. */
  idleMs: number;
}

export const DEFAULT_LSP_LIMITS: LspLimits = {
  maxMessageBytes: 8 * 1024 * 1024,
  queryTimeoutMs: 60_000,
  idleMs: 10 * 60_000,
};
