// The replicas port: which control-plane replicas run on one database and which of them owns each
// agent family (a top-level agent with its children and teammates), held by a lease with an
// epoch. Only the PostgreSQL backend keeps it (pg/leases.ts): the embedded libsql store serves one
// process, which owns every family. Types only; host/replicas decides what the leases mean.
// Invariants every backend keeps: time is the database's clock alone (a replica's clock never
// decides whether a lease has expired); a family has at most one lease row; its epoch only grows,
// and grows whenever the family changes hands or is taken again after its lease expired, so a
// write fenced by (family, epoch) can never be made by an owner that has since lost it. A family
// stays with its live holder: a holder's renewal that comes late (it was starved or stopped past
// its lease) keeps, in their epoch, the families it still holds that nobody took meanwhile, so a
// late renewal is no hand-over and a replica that resumes cannot take the family back from a
// holder that renews; a lease ended on purpose (released, retired) is never kept that way.

/** A replica as the others see it. */
export interface ReplicaInfo {
  id: string;
  /** How the other replicas reach it (DSH_REPLICA_URL). */
  url: string;
}

/** A family's lease as read. */
export interface FamilyLease {
  familyId: string;
  replicaId: string;
  epoch: number;
  /** The owner's URL; undefined when the owner is no longer registered. */
  url: string | undefined;
  /** Whether the lease has expired by the database's clock (anybody may take the family). */
  expired: boolean;
}

/** The answer of acquire(). */
export type Acquired = { held: true; epoch: number } | { held: false; lease: FamilyLease };

/** A family this replica still holds after a renewal, with its epoch. */
export interface HeldFamily {
  familyId: string;
  epoch: number;
}

export interface LeaseStore {
  /**
   * Registers (or refreshes) this replica; the others find its URL here. Every earlier holder of the
   * same replica id (`<id>:<start>`: a previous process of this replica, which has crashed or been
   * replaced) is retired first, so its families can be taken back at once.
   */
  register(replica: ReplicaInfo, replicaId?: string): Promise<void>;
  /** Removes this replica's row and ends its leases at once, so the others take its families without waiting. */
  retire(replicaId: string): Promise<void>;
  /**
   * Takes the family for `replicaId` for `ttlMs` when nobody holds it, its lease has expired, or
   * the replica holds it already (a renewal of that one family); otherwise answers who holds it.
   */
  acquire(familyId: string, replicaId: string, ttlMs: number): Promise<Acquired>;
  /**
   * Extends every unexpired lease of `replicaId` by `ttlMs` and refreshes its registration; the
   * families it still holds. Of `holding` (what the replica still holds, in which epoch), a lease
   * that ran out is extended too when it is still the replica's in that epoch (nobody took it
   * since) and was not ended on purpose (release, retire). A family missing from the answer is
   * lost (taken, or ran out and not named).
   */
  renew(replicaId: string, ttlMs: number, holding?: readonly HeldFamily[]): Promise<HeldFamily[]>;
  /** Removes the family's lease row (the family is gone: its top-level agent was deleted). */
  drop(familyId: string, replicaId: string): Promise<void>;
  /** Ends one family's lease now (a clean hand-off); false when the replica did not hold it. */
  release(familyId: string, replicaId: string): Promise<boolean>;
  /** Whether the replica is registered and renewed within the last `withinMs` (it still runs). */
  alive(replicaId: string, withinMs: number): Promise<boolean>;
  /** The family's lease, undefined when it has none. */
  lease(familyId: string): Promise<FamilyLease | undefined>;
  /** The leases of these families (those that have one), in one read. */
  leases(familyIds: readonly string[]): Promise<FamilyLease[]>;
}
