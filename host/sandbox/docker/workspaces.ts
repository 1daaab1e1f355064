// The port for where an agent's /workspace lives and what bounds its size: a WorkspaceStore makes a
// workspace for a new container, readies it before every (re)start, and removes it with its
// container. The stores are in workspaces/: `loop.ts`, a size-limited file system per workspace
// (the service's default), and `volume.ts`, plain Docker named volumes without a limit; `probe.ts`
// says whether loop workspaces can work on this machine. Every store passes
// tests/contract/workspaces/suite.ts.

import type Docker from 'dockerode';
import { WORKSPACE_ROOT } from '../paths.ts';

export interface WorkspaceUsage {
  usedBytes: number;
  limitBytes: number;
}

/** The /workspace mount of a container as `docker inspect` reports it. */
export interface WorkspaceMount {
  type: string;
  /** Volume name or host path. */
  source: string;
}

/** What a snapshot of a workspace holds: the workspace's size limit and the host disk it takes. */
export interface SnapshotFile {
  sizeBytes: number;
  bytes: number;
}

/**
 * A new workspace of a tenant while other tenants are about on the node: its `first` there, or a
 * `further` one (WorkspaceStore.create).
 */
export type DiskShare = 'first' | 'further';

export interface WorkspaceStore {
  readonly kind: 'loop' | 'volume';
  /**
   * Makes the workspace `name` holding at most `bytes`; returns the container's /workspace mount.
   * `alongside`, when given, is started as soon as that mount's source exists (a loop store: while
   * the file system is still being made or mounted), so that the container can be created
   * meanwhile; create() waits for it and fails with its failure, having removed the workspace.
   * `from`: a snapshot of this store (snapshot()) the workspace starts as a copy of; `bytes` must be
   * its size. A store without snapshots refuses it (SNAPSHOT_UNSUPPORTED).
   * `share`: other tenants are about (the node decides, provision.ts), and this is the tenant's
   * `first` workspace on the node or a `further` one; a store that bounds the disk admits a further
   * one only while a quarter of what it could admit stays open for tenants that hold none
   * (host/shares.ts), and a first one only within that quarter when it would leave less open, else
   * CAPACITY_EXCEEDED. A store without a disk bound ignores it.
   */
  create(
    name: string,
    bytes: number,
    labels: Record<string, string>,
    alongside?: (mount: Docker.MountSettings) => Promise<unknown>,
    from?: string,
    share?: DiskShare,
  ): Promise<Docker.MountSettings>;
  /**
   * Refuses (CAPACITY_EXCEEDED, as create() would) a `further` workspace of `bytes` that the
   * reserve for tenants that hold none leaves no room for: the check before a pooled sandbox goes
   * to such a tenant. Absent: no disk bound.
   */
  admitsFurther?(bytes: number): Promise<void>;
  /**
   * Copies the workspace into the snapshot `id` (a plain name), consistent: writes are held while
   * the copy is made (loop-snapshots.ts). The copy's host disk is admitted as a workspace's would
   * be (CAPACITY_EXCEEDED, nothing copied, when it does not fit); `further`: another tenant is
   * about, so it also leaves the reserve for tenants that hold none (create's `further`). Absent:
   * this store cannot snapshot.
   */
  snapshot?(mount: WorkspaceMount, id: string, further?: boolean): Promise<SnapshotFile>;
  /** Deletes a snapshot's file (gone already: done). With snapshot(). */
  dropSnapshot?(id: string): Promise<void>;
  /**
   * Deletes the snapshot files (not written lately) whose id `recorded` does not return: those a
   * process that ended left behind. Resolves to the ids removed. With snapshot(); only for a store
   * whose root no other instance shares (host/agents/service/snapshot-sweep.ts decides).
   */
  sweepSnapshots?(recorded: (ids: string[]) => Promise<ReadonlySet<string>>): Promise<string[]>;
  /**
   * The same workspaces, with snapshots that are `instance`'s alone: its snapshot(), dropSnapshot(),
   * create() `from` and sweeps see no other instance's snapshots, nor the store's own (loop: the
   * folder `.snapshots/<instance>`). A node agent gives one to each control-plane instance it
   * serves (host/serve-node.ts). With snapshot().
   */
  forInstance?(instance: string): WorkspaceStore;
  /**
   * Keeps `count` workspaces of `bytes` made ahead for the names that start with `${prefix}-`, so
   * that create() of such a name and size only takes one (a loop store: formatted images, named
   * `${prefix}-spare-…`, counted by disk admission like any workspace, and given up when a create
   * would not fit otherwise). Refilled in the background; `onError` hears what failed there. A
   * store without it makes every workspace on demand.
   */
  keepSpares?(prefix: string, bytes: number, count: number, onError: (e: unknown) => void): void;
  /** Resolves when the spares of `prefix` are refilled (or refilling stopped at a failure). */
  sparesFilled?(prefix: string): Promise<void>;
  /** Stops keeping spares for `prefix` and removes the ready ones. */
  dropSpares?(prefix: string): Promise<void>;
  /**
   * Before a container (re)starts: its workspace is mounted. Fails SANDBOX_UNAVAILABLE if it is
   * gone (a volume store has nothing to mount and leaves volumes to the engine).
   */
  ready(mount: WorkspaceMount): Promise<void>;
  /** Removes a workspace whose container is gone. "Already gone" is done. */
  remove(mount: WorkspaceMount): Promise<void>;
  /** The size limit of a workspace, when it has one (re-adopted containers). */
  limitOf(mount: WorkspaceMount): Promise<number | undefined>;
  /** Space used and limit, when known. */
  usage(mount: WorkspaceMount): Promise<WorkspaceUsage | undefined>;
  /** Whether the workspace still exists (its container may not): a new container can take it over. */
  exists(mount: WorkspaceMount): Promise<boolean>;
  /**
   * True only when the mount is provably one of this store's (loop: an image under its root).
   * Volumes carry no such proof and answer false.
   */
  owns(mount: WorkspaceMount): boolean;
  /**
   * Removes the workspaces (of this store) that no container in `keep` uses and whose name passes
   * `only` (default: every name), except the ones this process made and has not removed, unless
   * `all` (tests tearing down a run).
   */
  sweep(keep: Iterable<WorkspaceMount>, all?: boolean, only?: (name: string) => boolean): Promise<number>;
}

/** The /workspace mount of an inspected container, if it has one. */
export const workspaceOf = (info: Docker.ContainerInspectInfo): WorkspaceMount | undefined => {
  const m = (info.Mounts ?? []).find((x) => x.Destination === WORKSPACE_ROOT);
  if (!m) return undefined;
  return m.Type === 'volume' ? { type: 'volume', source: m.Name ?? '' } : { type: m.Type, source: m.Source };
};
