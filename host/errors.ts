// One error module for the whole service: stable SCREAMING_SNAKE codes, one base class, and one
// table from code to HTTP status that only the API's error handler reads. Foreign errors
// (dockerode, isolated-vm, libsql) are translated once at their boundary, keeping `cause`.

/** Every stable error code the service can return. Codes never change meaning once shipped. */
export const ERROR_CODES = {
  // tool runtime (seed 003)
  UNKNOWN_TOOL: 404,
  INVALID_ARGUMENTS: 400,
  DENIED: 403,
  ABORTED_BEFORE_DISPATCH: 409,
  ABORTED: 409,
  TOOL_TIMEOUT: 504,
  TOOL_FAILED: 500,
  TOOL_ACTIVATION_FAILED: 500,
  DUPLICATE_TOOL: 409,
  RESERVED_TOOL_NAME: 400,
  /** A plugin tried to register a name a built-in, remote or other plugin tool has: never shadowed. */
  TOOL_NAME_TAKEN: 409,
  // An agent's MCP server (a tool source) died, hung, sent garbage or would not start.
  MCP_SERVER_FAILED: 502,
  DUPLICATE_EXECUTOR: 409,
  NO_EXECUTOR: 500,
  /** The agent is in plan mode and the call would change something; it was not run. */
  PLAN_MODE: 403,
  /**
   * The call was running when its service stopped (a crash, a restart, a fail-over): logged at the
   * next start (host/tools/interrupted.ts); it may or may not have taken effect. Check before
   * running it again.
   */
  INTERRUPTED: 503,
  // sandbox
  SANDBOX_UNAVAILABLE: 503,
  SANDBOX_PROTOCOL: 502,
  PATH_OUTSIDE_WORKSPACE: 400,
  FILE_NOT_FOUND: 404,
  NOT_A_FILE: 400,
  NOT_A_DIRECTORY: 400,
  FILE_TOO_LARGE: 413,
  BINARY_FILE: 400,
  ARCHIVE_REJECTED: 400,
  JOB_NOT_FOUND: 404,
  /** A command a client ran (POST /v1/agents/:id/exec) outlived its timeoutMs and was killed. */
  EXEC_TIMEOUT: 504,
  TERMINAL_NOT_FOUND: 404,
  DIRECTORY_NOT_EMPTY: 409,
  LIMIT_EXCEEDED: 400,
  /** The agent's workspace file system is full (its disk limit); other agents are unaffected. */
  DISK_FULL: 507,
  /** The host cannot take another workspace of that size without risking its disk (no overcommit). */
  CAPACITY_EXCEEDED: 507,
  // egress (host/egress): a destination the allowlist or the address rules refuse, a tenant's
  // egress budget used up, an upstream that failed or broke a cap.
  EGRESS_DENIED: 403,
  EGRESS_BUDGET_EXCEEDED: 429,
  EGRESS_FAILED: 502,
  /**
   * An agent may not start another child: too many children, too many running at once, or too deep
   * (`data.limit` says which, `data.max` the tenant's most).
   */
  CHILD_LIMIT_EXCEEDED: 429,
  /** The recipient's mailbox holds its tenant's most undelivered messages; it must read some first. */
  MAILBOX_FULL: 429,
  // code mode / isolates
  CODE_RUN_FAILED: 422,
  ISOLATE_UNAVAILABLE: 503,
  // store
  STORE_FAILED: 500,
  /** The tenant's durable log is over its storage budget: new calls are not run (nothing else is lost). */
  STORE_BUDGET_EXCEEDED: 507,
  // control plane
  BAD_REQUEST: 400,
  MALFORMED_JSON: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  /** An optimistic update named a revision that is not the current one (`data.currentRevision`). */
  REVISION_CONFLICT: 409,
  // team task board (host/teams/board/)
  /** `blocked_by` would close a cycle of dependencies (`data.cycle` lists it). */
  DEPENDENCY_CYCLE: 409,
  /** A claim of a task whose blockers are not all completed (`data.open` lists them). */
  TASK_BLOCKED: 409,
  /** The action does not apply to the task's status (e.g. complete a pending task). */
  TASK_STATE: 409,
  /** The task is held by another teammate; only its owner (or the team lead) may do that. */
  NOT_TASK_OWNER: 403,
  /** A delete of a task other tasks are blocked by (`data.dependents`); unlink them first. */
  TASK_HAS_DEPENDENTS: 409,
  /** A write outside the write scopes of the task the agent holds (`data.task`, `data.scopes`). */
  WRITE_SCOPE: 403,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  /** Too many failed key attempts from the request's address: refused unchecked until Retry-After. */
  AUTH_THROTTLED: 429,
  REQUEST_EXPIRED: 410,
  /** An Idempotency-Key header that is not 1 to 255 printable ASCII characters. */
  IDEMPOTENCY_KEY_INVALID: 400,
  /** An Idempotency-Key sent again with a different batch (another body) for the same agent. */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** The Idempotency-Key's batch still runs on another replica: retry after Retry-After for its answer. */
  IDEMPOTENCY_KEY_IN_PROGRESS: 409,
  /** A call batch named a step that is unknown or expired (POST /v1/agents/:id/steps opens one). */
  STEP_NOT_FOUND: 404,
  SHUTTING_DOWN: 503,
  // replicas (host/api/forward): a request for an agent another replica owns is forwarded there.
  /** The replica that owns the agent did not answer; retry after Retry-After (ownership moves on). */
  OWNER_UNREACHABLE: 503,
  /** A forwarded request reached a replica that no longer owns the agent; retry after Retry-After. */
  OWNER_MOVED: 503,
  /** Replica forwarding headers (x-dsh-*) without a valid, current replica signature. */
  FORWARD_UNVERIFIED: 401,
  /**
   * Replicas: this replica no longer owns the agent's family (its lease was taken over while it was
   * paused or cut off); what it was doing for the family stops, the new owner answers. Retry.
   */
  OWNER_FENCED: 503,
  REQUEST_TIMEOUT: 504,
  CONFIG_INVALID: 500,
  INTERNAL: 500,
  // pause and resume (host/agents/service/pause.ts)
  /** The agent is paused and its tenant's settings say calls do not resume it: POST …/resume first. */
  AGENT_PAUSED: 409,
  /** The agent has a call, transfer or terminal in flight: pause it once that is done. */
  AGENT_BUSY: 409,
  /** A child that works in its parent's workspace has no sandbox of its own to pause: pause the parent. */
  AGENT_SHARES_WORKSPACE: 409,
  // sandbox runtimes (host/sandbox/runtimes.ts)
  /** The agent asked for a sandbox runtime (`sandbox.runtime`) the service's engine does not offer (`data.offered`). */
  RUNTIME_UNAVAILABLE: 400,
  /** The agent asked for a sandbox runtime its tenant may not use (`data.allowed`). */
  RUNTIME_NOT_ALLOWED: 403,
  // nodes (host/sandbox/nodes/placement.ts)
  /**
   * The node that holds the agent's sandbox and workspace does not answer (`data.node`): its node
   * agent or engine is down. Retry later: the agent works again, with its files, once it is back.
   */
  NODE_UNREACHABLE: 503,
  // checkpoints and rollback (host/agents/checkpoints/)
  /** No checkpoint of that call id: it was not a tracked file call of this agent, or it was rolled back. */
  CHECKPOINT_NOT_FOUND: 404,
  /** The call's checkpoint, or a later one the rollback needs, was dropped (the agent's bounds, or a file too large to keep). */
  CHECKPOINT_DROPPED: 409,
  /** A file the rollback would restore changed after the last tracked call (bash, a job, a client): restoring would lose that change. */
  ROLLBACK_UNSAFE: 409,
  // workspace snapshots (host/agents/service/snapshots.ts)
  /**
   * The agent's workspace cannot be snapshotted (or an agent made from a snapshot) here: Docker
   * volumes without a size limit (DSH_DISK_QUOTA=off, here or on a remote node), or the memory provider.
   */
  SNAPSHOT_UNSUPPORTED: 501,
  // log retention (host/tenants/retention.ts)
  /** The events asked for (`after=` older than the kept log) were removed by retention: resume from `data.firstSeq` - 1. */
  LOG_TRUNCATED: 410,
  // snapshots on several nodes (host/sandbox/nodes/placement.ts)
  /** An agent made from a snapshot goes on the snapshot's node (named in the message), which is cordoned: uncordon it, or wait. */
  NODE_CORDONED: 503,
  // rollback while the agent works (host/agents/checkpoints/agent.ts)
  /** A call batch of the agent runs now (`data.running`): roll back once it ended, or interrupt it first. */
  ROLLBACK_BUSY: 409,
  // certificate roles on the node protocol (host/sandbox/nodes/remote/roles.ts)
  /**
   * A peer on the node protocol presented a certificate of the cluster's CA but of the wrong role
   * or name: a node agent's certificate used as a control plane's, a node's certificate that is
   * not the node dialled (`data.node`), or a control plane's that does not name the instance it
   * asked for (`data.instance`, `data.instances`: those it names). An operator's fix: the right
   * certificate (docs/nodes.md, "Roles" and "Instances").
   */
  NODE_CERTIFICATE_REFUSED: 502,
  // an agent no node is recorded for (host/sandbox/nodes/placement.ts)
  /**
   * Two or more nodes say they hold the agent's sandbox (`data.nodes`) and the store records none
   * of them: the agent is sent to neither (one may be a hostile or copied machine). An operator's
   * fix: remove the container that is not the agent's, then retry.
   */
  NODE_CONFLICT: 502,
  // quota turns across replicas (host/store/pg/quota-turns.ts)
  /**
   * A lock in the store that another replica holds (a tenant's quota check on PostgreSQL) was not
   * let go within its bound: nothing was done. Retry after Retry-After.
   */
  STORE_BUSY: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface SandboxErrorOptions {
  /** Structured detail for logs and API results; never shown to the model. */
  data?: Record<string, unknown>;
  cause?: unknown;
}

/** Base class of every error the service raises on purpose. */
export class SandboxError extends Error {
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: SandboxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SandboxError';
    this.code = code;
    this.data = options.data;
  }
}

export const isSandboxError = (value: unknown): value is SandboxError => value instanceof SandboxError;

/** HTTP status for a code; used only by the API's error handler. */
export const httpStatusOf = (code: ErrorCode): number => ERROR_CODES[code];

export const isErrorCode = (value: unknown): value is ErrorCode =>
  typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);

/** The message of anything thrown, without trusting its shape. */
export const messageOf = (error: unknown): string => {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
};

/** Longest text from outside that oneLine keeps for a log line. */
export const LOG_TEXT_MAX = 2000;

/**
 * Text from outside the control plane (a node's error, a server's message) made fit for one log
 * line: control characters (newlines, carriage returns, ESC and the rest) escaped as \n, \r or \xNN,
 * so it cannot forge another line or drive an operator's terminal; cut at LOG_TEXT_MAX characters.
 */
export const oneLine = (text: string): string => {
  const cut = text.length > LOG_TEXT_MAX ? `${text.slice(0, LOG_TEXT_MAX)}…` : text;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
  return cut.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, (c) =>
    c === '\n' ? '\\n' : c === '\r' ? '\\r' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
};
