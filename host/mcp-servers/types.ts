// The vocabulary of MCP servers brought into an agent as tool sources: what a registration says
// (McpServerSpec), what the agents table keeps of each (McpServerRecord: the spec and the tools it
// listed last, so the agent's tool set is known after a restart without starting anything), the
// per-tenant bounds (McpLimits) and what the API reports of a running server (McpServerStatus).
import type { JsonSchema } from '../tools/types.ts';

/** A stdio MCP server: a program the agent's sandbox runs, speaking JSON-RPC on its stdin/stdout. */
export interface McpStdioSpec {
  /** 1-32 of [A-Za-z0-9-] (no `_`, so `mcp__<server>__<tool>` parses one way); unique per agent. */
  name: string;
  transport: 'stdio';
  /**
   * Program and arguments, run without a shell in the agent's sandbox with the agent's uid and the
   * servers' gid (sandbox-image/sandboxd/identity.ts).
   */
  command: string[];
  /** Working directory in the workspace. Default: the workspace root. */
  cwd?: string;
  /**
   * Extra environment of the program (nothing of the service's own reaches it); the agent's
   * processes cannot read it (another gid), though a program in the workspace is the agent's to edit.
   */
  env?: Record<string, string>;
  /** Deadline of one tools/call, within the tenant's maximum (callTimeoutMs). */
  timeoutMs?: number;
}

/**
 * A remote MCP server (Streamable HTTP) the control plane reaches through the egress gateway, only
 * at a URL the tenant's allowlist admits. Its headers (tokens) are kept by the service: never shown
 * to the model, the sandbox or back through the API (only their names).
 */
export interface McpHttpSpec {
  /** As McpStdioSpec's. */
  name: string;
  transport: 'http';
  /** The server's MCP endpoint, http or https, without userinfo. */
  url: string;
  /** Sent with every request to the server. */
  headers?: Record<string, string>;
  /** Deadline of one tools/call, within the tenant's maximum (callTimeoutMs). */
  timeoutMs?: number;
}

export type McpServerSpec = McpStdioSpec | McpHttpSpec;

/** A tool as the server listed it (only the fields we use, bounded). */
export interface McpToolInfo {
  /** The server's own name for it. */
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** Tools of a server the agent does not get: how many, and the first few with the reason. */
export interface McpSkipped {
  count: number;
  /** At most 20 (MAX_SKIP_NOTES in listing.ts), in the order the server listed them. */
  first: Array<{ tool: string; reason: string }>;
}

/** The spec and the tools the server listed when it last started. */
export type McpServerRecord = McpServerSpec & { tools: McpToolInfo[] };

/** Bounds per tenant (the service's maxima; see DEFAULT_MCP_LIMITS). */
export interface McpLimits {
  /** MCP servers one agent may have. Default 8. */
  maxServers: number;
  /** Tools taken from one server; the rest are skipped (and counted). Default 64. */
  maxToolsPerServer: number;
  /**
   * Bounds of one tools/list listing, valid tools or not: pages asked for (default 16), tools read
   * (default 1024) and bytes of their JSON (default 4 MiB). The listing stops at the first bound it
   * meets, keeps what it read and says so; it also ends at the start's deadline (startTimeoutMs).
   */
  maxListPages: number;
  maxListedTools: number;
  maxListBytes: number;
  /** Largest message a server may send (a result, a tool list), in bytes. Default 1 MiB. */
  maxResultBytes: number;
  /** Longest (and default) deadline of one tools/call. Default 60000 ms. */
  callTimeoutMs: number;
  /**
   * Deadline of a start: the program launched, initialized and its tools listed (all pages, within
   * the bounds above). Default 30000 ms.
   */
  startTimeoutMs: number;
  /** Failed starts or crashes in a row after which a server is marked failed. Default 3. */
  maxFailures: number;
  /**
   * A running server with no call for this long is stopped (it starts again at the next call), so
   * an idle agent's container can be stopped by the idle reaper. 0 keeps it running. Default 300000.
   */
  idleMs: number;
}

export const DEFAULT_MCP_LIMITS: Readonly<McpLimits> = Object.freeze({
  maxServers: 8,
  maxToolsPerServer: 64,
  maxListPages: 16,
  maxListedTools: 1024,
  maxListBytes: 4 * 1024 * 1024,
  maxResultBytes: 1024 * 1024,
  callTimeoutMs: 60_000,
  startTimeoutMs: 30_000,
  maxFailures: 3,
  idleMs: 300_000,
});

/**
 * Where a server is: `stopped` (not running; starts at the next call), `starting`, `ready`, or
 * `failed` (it failed maxFailures times in a row; its calls fail until it is registered again).
 */
export type McpServerState = 'stopped' | 'starting' | 'ready' | 'failed';

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  /** A stdio server's program and arguments. */
  command?: string[];
  /** A remote server's URL. */
  url?: string;
  /** The names of a remote server's headers (never their values). */
  headers?: string[];
  state: McpServerState;
  /** Model-facing name → the server's own tool name. */
  tools: Array<{ name: string; tool: string }>;
  /** The first 20 tools of the server that the agent does not get, with the reason. */
  skipped: Array<{ tool: string; reason: string }>;
  /** How many tools of the server the agent does not get (all of them, not only those shown). */
  skippedCount: number;
  /** Why its last listing stopped before the server's last page, when a bound stopped it. */
  incomplete?: string;
  /** Why it last failed (with the end of its stderr), if it did. */
  lastError?: string;
  /** Starts after the first one. */
  restarts: number;
}
