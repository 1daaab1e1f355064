// The node interface (docs/nodes.md): what the control plane asks of the machine its agents'
// sandboxes run on. A node owns what is local to that machine (the engine, workspaces and their
// disk limits, the warm pool, link folders, adoption) and carries bytes to and from each sandbox's
// sandboxd; it never speaks for the sandbox: the control plane runs the sandboxd client over the
// bytes a node gives it and validates every frame itself (host/sandbox/sandboxd/client.ts).
// Implementations: the embedded node over the local Docker engine (docker/node.ts, the service's
// default); a remote node over the network and a Kubernetes one are each one more.
// Invariants every implementation keeps: at most one sandbox per agent on a node; a destroyed
// agent's sandbox is never made again by open(); `open` and `link` hand over raw bytes (the node
// reads none of them after the link's preface, which it checks itself); closing a pipe detaches
// only (the sandbox keeps running).

import type { Readable, Writable } from 'node:stream';
import type { IdlePollState } from '../../idle-poll.ts';
import type { SandboxRuntime } from '../runtimes.ts';
import type { PauseMode, SandboxLimits, SandboxUsage, SandboxUsageOptions } from '../types.ts';

/** Bytes to and from one sandbox's sandboxd: its stdio (the attach stream) or its link socket. */
export interface SandboxdPipe {
  /** What sandboxd writes. Ends when the transport does. */
  readonly input: Readable;
  /** What sandboxd reads. */
  readonly output: Writable;
  /** Settles when the transport is gone (detached, the sandbox stopped, the node gone). */
  readonly closed: Promise<void>;
  /** Detaches this pipe; the sandbox keeps running. */
  close(): void;
}

/** A pipe that sandboxd may leave for its link socket (docs/nodes.md, "the link"). */
export interface SandboxdChannel extends SandboxdPipe {
  /**
   * Present when the sandbox has a link folder: the node listens on its socket for the one
   * connection that opens with the token's preface. The control plane sends the token to sandboxd
   * (its `dial` call on this channel) and then speaks to sandboxd over `accepted`.
   */
  link?(): Promise<LinkOffer>;
}

export interface LinkOffer {
  /** What sandboxd must present (64 hex digits). */
  readonly token: string;
  /** The link once sandboxd dialled with the token; rejects when given up or past the deadline. */
  readonly accepted: Promise<SandboxdPipe>;
  /** Stops listening; a pipe already accepted stays open. */
  close(): void;
}

/**
 * What the control plane keeps with a pooled sandbox, made ahead on its channel (its session,
 * opened and verified) and dropped when the pooled sandbox goes; the provider gives them to its node.
 */
export interface WarmHooks {
  /** `limits`: the pooled sandbox's (the node's defaults). */
  make(channel: SandboxdChannel, limits: SandboxLimits): Promise<unknown>;
  drop(warm: unknown): Promise<void>;
}

/**
 * A node's pooled sandboxes' channels, for a remote control plane's warm sessions (the node agent's
 * server serves them): each channel is handed to one claim only, and a claimed sandbox goes to no
 * ensure but one presenting the claim (NodeSandboxSpec.pooled).
 */
export interface PooledChannels {
  /** The ready pooled sandboxes' ids that nobody claimed. */
  unclaimed(): string[];
  /** The channel of the ready, unclaimed pooled sandbox `id` and the claim's token; undefined if none. */
  claim(id: string): { channel: SandboxdChannel; claim: string } | undefined;
  /**
   * The pool as the holder of `claims` sees it: its size, and the ready pooled sandboxes it can be
   * given (those nobody claimed and its own; another control plane's claimed ones are not its).
   */
  poolFor(claims: ReadonlyArray<{ id: string; claim: string }>): { ready: number; size: number };
}

/** What the control plane asks a node to place. */
export interface NodeSandboxSpec {
  agentId: string;
  tenantId: string;
  /** Resolved by the control plane against the node's defaults and maxima. */
  limits: SandboxLimits;
  /**
   * The container runtime (../runtimes.ts). Default DEFAULT_RUNTIME. One the node's engine does
   * not offer (capacity().runtimes) fails with RUNTIME_UNAVAILABLE; the control plane decides
   * which tenants may ask for one (host/agents/sandbox-runtime.ts).
   */
  runtime?: SandboxRuntime;
  /**
   * The agent whose workspace this one starts from (an isolated child's parent's owner): placement
   * among several nodes puts it on that agent's node (nodes/placement.ts). A node ignores it.
   */
  near?: string;
  /**
   * A snapshot on this node (snapshot()) the new sandbox's workspace starts as a copy of;
   * `limits.diskBytes` must be its size. Never a pooled sandbox. A node without snapshots refuses
   * it (SNAPSHOT_UNSUPPORTED).
   */
  fromSnapshot?: string;
  /**
   * The node that holds `fromSnapshot` (its record's `node`): placement among several nodes puts
   * the agent there, and nowhere else. A node ignores it.
   */
  snapshotNode?: string;
  /**
   * The agent never had a sandbox (its first create): placement among several nodes asks no node
   * whether it holds one (a node's `find` is only its word: one answering yes for every agent would
   * be handed every new agent, cordoned or not) and places it itself. A node ignores it.
   */
  fresh?: boolean;
  /**
   * Pooled sandboxes whose channels the caller claimed (PooledChannels.claim): one of them is
   * taken first when the agent may have a pooled one. Set by a remote node's client for its warm
   * sessions (remote/warm.ts); the node takes none it did not hand to that claim.
   */
  pooled?: ReadonlyArray<{ id: string; claim: string }>;
}

/** A snapshot a node took of a workspace. */
export interface NodeSnapshot {
  /** The workspace's size limit: an agent made from it gets that limit. */
  sizeBytes: number;
  /** The host disk it takes on the node (a sparse copy). */
  bytes: number;
  /** The node whose disk holds it, where that is not this node's name (placement: one of its nodes). */
  node?: string;
}

/** An agent's sandbox on a node. */
export interface NodeSandbox {
  /** The sandbox's id on the node (the container id): the store records it as `sandboxId`. */
  id: string;
  /** The limits it has (read back from the node after a restart). */
  limits: SandboxLimits;
  /** Its tenant (the control plane's idle pauses go by it); absent when the node cannot tell. */
  tenantId?: string;
}

/** A placed sandbox; `warm` is what the node's warm hook made for a pooled one (embedded node only). */
export interface Placed<W> extends NodeSandbox {
  /** The agent had this sandbox already (nothing was made; its limits are the ones it has). */
  found?: boolean;
  warm?: W;
}

export interface OpenOptions {
  /** Kill and start the sandbox first (its sandboxd does not answer). Files stay; processes go. */
  restart?: boolean;
}

export type SandboxState = 'running' | 'stopped' | 'absent';

/** What a node reports for placement (the control plane picks among nodes by these). */
export interface NodeCapacity {
  /** The node's name (embedded: 'local'). */
  node: string;
  cpus: number;
  memoryBytes: number;
  /** Free bytes where workspaces live; absent when the node cannot tell. */
  diskFreeBytes?: number;
  /** This instance's sandboxes on the node, and how many of them run. */
  sandboxes: number;
  running: number;
  pool: { ready: number; size: number };
  /** The runtimes the node's engine offers (`runc` always). */
  runtimes: SandboxRuntime[];
  /** A node agent's idle polling as its calls left it (DSH_IDLE_POLL there); absent from an embedded node or an older agent. */
  idlePoll?: IdlePollState;
}

export interface AdoptOptions {
  /**
   * Container ids this instance's store records as its agents' sandboxes (`sandboxId`). Only a
   * container made before instance ids existed and listed here is adopted (ownership.ts).
   */
  claim?: Iterable<string>;
  /**
   * Container id → agent id for every agent of this instance's store that records a sandbox: a
   * pool container listed here was assigned to that agent by a process that ended before renaming
   * it, and is adopted under the agent's name instead of being removed as a leftover.
   */
  assigned?: ReadonlyMap<string, string>;
  /**
   * This instance is shared by replicas (several processes on one store, each with a provider):
   * `alive(owner)` says whether the process whose pool owner label (`dsh.pool.owner`) is `owner`
   * still runs, and its pool containers are its warm pool, not leftovers (serve-sandboxes.ts asks
   * the replicas table); and since another replica may make an agent's container at any time (one
   * this replica takes over later), lookups keep asking the engine about any agent's name.
   * Default: one process per instance: every other owner's unassigned pool containers are
   * removed, and only the agent containers listed now can exist besides this process's own.
   */
  replicas?: { alive(owner: string): Promise<boolean> };
  /**
   * Every agent id the store knows (deleted ones included), read at `knownAt` (epoch ms): an agent
   * container of this instance created before then whose agent is not among them is reclaimed,
   * with its workspace (a store restored to an older point; docker/ownership.ts). Unset: every
   * agent container of the instance is adopted.
   */
  known?: Iterable<string>;
  knownAt?: number;
  /**
   * The node protocol's form of `known` (remote/client.ts): among the agents' slugs the node asked
   * about (AdoptQuestions.agents), those the store does not know; their containers created before
   * `knownAt` are reclaimed, every other container is judged as without `known`. So a node learns
   * the store's answer about its own containers only, never the list of every agent.
   */
  unknown?: Iterable<string>;
}

/**
 * What a node needs the store's word on before it adopts (the node protocol's first `adopt` step,
 * docs/nodes.md "Adoption"): the containers whose verdict depends on `claim` and `assigned` (legacy
 * agent containers, this instance's pool containers another process left), and the slugs of this
 * instance's agent containers old enough to be judged by `known`. The control plane answers about
 * these only, so no node is sent the ids of agents that are not on it.
 */
export interface AdoptQuestions {
  /** Container ids. */
  sandboxes: string[];
  /** Agent slugs (the part of an agent container's name after `-agent-`). */
  agents: string[];
}

/** A node that can say what its adopt needs to know (the embedded node over the engine can). */
export interface AdoptAsking {
  adoptQuestions(knownAt?: number): Promise<AdoptQuestions>;
}

/**
 * One machine's sandboxes, for one control-plane instance. `W` is what the embedded node's warm
 * hook keeps with a pooled sandbox (a session opened in the same process); a remote node has none.
 */
export interface SandboxNode<W = never> {
  readonly name: string;
  /** Limits of a sandbox nobody asked otherwise for (what the pool holds). */
  readonly defaults: SandboxLimits;
  /** The most a sandbox may have. */
  readonly maxima: SandboxLimits;
  readonly pool: { readonly ready: number; filled(): Promise<void> };
  /** The agent's sandbox: the one it has, else a pooled one (with the default disk), else a new one. */
  ensure(spec: NodeSandboxSpec): Promise<Placed<W>>;
  /** The agent's sandbox when it has one (after a restart too); never makes one. */
  find(agentId: string): Promise<NodeSandbox | undefined>;
  /**
   * A pipe to the agent's sandboxd, its sandbox started first when stopped, thawed when frozen (a
   * pause: opening is how a paused sandbox resumes), and made again (on its old workspace when that
   * remains) when it vanished behind the node's back. Fails with SANDBOX_UNAVAILABLE for an agent
   * destroyed here or never placed here.
   */
  open(agentId: string, options?: OpenOptions): Promise<SandboxdChannel>;
  state(agentId: string): Promise<SandboxState>;
  /** Stops the agent's sandbox (the idle reaper's decision, made by the control plane). */
  stop(agentId: string): Promise<void>;
  /**
   * Pauses the agent's sandbox (the control plane's decision, made once its session is closed and
   * no call of the agent is in flight): `stop` stops it (a frozen one is thawed first, so its
   * processes can be told to stop), `freeze` freezes its processes in place. What was done: `stop`
   * when a freeze found it not running, `none` when the agent has no sandbox here. open() resumes
   * it (starts or thaws) and waits for a pause in progress.
   */
  pause(agentId: string, mode: PauseMode): Promise<PauseMode | 'none'>;
  /** Removes the agent's sandbox and its workspace; open() never makes it again. */
  destroy(agentId: string): Promise<void>;
  /**
   * Copies the agent's workspace into the snapshot `id` (a plain name the control plane chose),
   * consistent: its writes held while the copy is made. SANDBOX_UNAVAILABLE for an agent without a
   * sandbox here; SNAPSHOT_UNSUPPORTED where its workspace cannot be copied. Optional: a node
   * without it has no snapshots.
   */
  snapshot?(agentId: string, id: string): Promise<NodeSnapshot>;
  /**
   * Deletes a snapshot (gone already: done). With snapshot(). `node`: the node that holds it, as
   * snapshot() answered (placement routes by it; a single node ignores it).
   */
  dropSnapshot?(id: string, node?: string): Promise<void>;
  /**
   * Removes this instance's snapshot files on the node that no record keeps: those untouched for
   * the sweep's grace (a copy in progress is younger; loop-snapshots.ts TEMP_GRACE_MS) whose ids
   * `recorded` does not return. The ids removed; a failure of `recorded` removes nothing. With
   * snapshot() (placement: on every node that answers, each its own files).
   */
  sweepSnapshots?(recorded: (ids: string[]) => Promise<ReadonlySet<string>>): Promise<string[]>;
  usage(agentId: string, options?: SandboxUsageOptions): Promise<SandboxUsage | undefined>;
  /** At start: finds this instance's sandboxes again, removes leftovers; the agents' names found. */
  adopt(options?: AdoptOptions): Promise<string[]>;
  capacity(): Promise<NodeCapacity>;
  /**
   * The name of the node that holds the agent's sandbox when that node is known not to answer now
   * (placement's health, memory only); undefined otherwise. Optional: a single node has none.
   */
  unreachable?(agentId: string): string | undefined;
  /**
   * A call on the agent's open session failed with `error` (SANDBOX_UNAVAILABLE: the session ended
   * under it): the agent's node is probed now, and the error to report is NODE_UNREACHABLE naming
   * that node when it does not answer (its link or engine went), else `error` as it was (the
   * sandbox died on a live node). Optional: a single node has none.
   */
  lost?(agentId: string, error: unknown): Promise<unknown>;
  /**
   * Gives the node the provider's warm hooks (a remote node then keeps a verified session with each
   * of its pooled sandboxes, and ensure hands one over as `warm`). Optional: the embedded node takes
   * its hooks when made.
   */
  warmWith?(hooks: WarmHooks): void;
  /** Stops the pool and background work; sandboxes stay for adoption. */
  close(): Promise<void>;
}
