// The bounds on child agents and mailboxes. The service's defaults (DSH_CHILD_*, DSH_MAILBOX_*)
// apply to every tenant; a tenant's own maxima (the agent service's `children.limitsOf`) replace them field by field.

export interface ChildLimits {
  /** Live children (and teammates) one agent may have made. Default 16. */
  childrenPerAgent: number;
  /** How deep the tree may grow: a top-level agent is depth 0, its children depth 1. Default 3. */
  maxDepth: number;
  /** Children of one agent that may run at once (status `running`). Default 8. */
  concurrentChildren: number;
  /** Undelivered messages one mailbox may hold; sending more is MAILBOX_FULL. Default 256. */
  mailboxSize: number;
  /** Bytes (UTF-8) of one message or report. Default 65536. */
  messageBytes: number;
  /** The longest wait_agent may wait, in ms (its timeout_ms is cut to this). Default 600000. */
  waitMaxMs: number;
  /** Messages a fork copies from its parent's conversation (the newest). Default 2000. */
  forkMessages: number;
  /** How long the client has to run a child (answer its `subagent` request). Default 1800000 ms. */
  runTtlMs: number;
}

export const DEFAULT_CHILD_LIMITS: ChildLimits = Object.freeze({
  childrenPerAgent: 16,
  maxDepth: 3,
  concurrentChildren: 8,
  mailboxSize: 256,
  messageBytes: 64 * 1024,
  waitMaxMs: 600_000,
  forkMessages: 2000,
  runTtlMs: 1_800_000,
});

/** The limits of `tenantId`: its own maxima over the service's defaults. */
export const childLimitsFor = (
  defaults: Partial<ChildLimits> | undefined,
  limitsOf: ((tenantId: string) => Partial<ChildLimits> | undefined) | undefined,
  tenantId: string,
): ChildLimits => ({ ...DEFAULT_CHILD_LIMITS, ...defaults, ...limitsOf?.(tenantId) });
