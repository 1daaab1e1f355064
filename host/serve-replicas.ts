// Replicas in `serve`: on a PostgreSQL store (which keeps the replicas port) this process is one
// replica among any number on the database: it gets an id and an event fence before the store
// opens (every event it writes is fenced), and once the agent service runs, the ownership of agent
// families (host/replicas) with what taking one over (its interrupted calls repaired, its plugins
// and pending child runs resumed) and losing one do to the service. The embedded
// libsql store has no replicas port: nothing here runs, and this process owns every agent.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentService } from './agents/service.ts';
import { createForwarder, type ReplicaDeps } from './api/forward/route.ts';
import { replicaKey } from './api/forward/sign.ts';
import { newReplicaId, REPLICA_ID } from './replica.ts';
import { createFence, type ReplicaFence } from './replicas/fence.ts';
import { createOwnership, type Ownership } from './replicas/ownership.ts';
import type { Store } from './store/store.ts';
import { repairInterruptedCalls, repairLine } from './tools/interrupted.ts';
import { trustedProxies } from './trusted-proxies.ts';

export interface ReplicaIdentity {
  /** DSH_REPLICA_ID, or a fresh one: how logs and forwarded requests name this replica. */
  replicaId: string;
  /**
   * What holds leases: the replica id and a part new at every start. A replica restarted under the
   * same DSH_REPLICA_ID is a new holder, so a family it held before is taken over (one epoch up,
   * its interrupted calls repaired) and a former process of it that still runs (paused, cut off)
   * is fenced like any other replica.
   */
  holder: string;
  fence: ReplicaFence;
}

/** Where a replica's id is kept when DSH_REPLICA_ID does not give one. */
export const REPLICA_ID_FILE = 'replica-id';

/**
 * The replica id of this data directory: made once (the host name and a random part) and kept in
 * `<data dir>/replica-id`, so a replica that restarts (a crash, an upgrade) is the same replica and
 * takes back the families it held at once instead of waiting for their leases to run out.
 */
const dataDirReplicaId = (dataDir: string): string => {
  const file = join(dataDir, REPLICA_ID_FILE);
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (REPLICA_ID.test(kept)) return kept;
  }
  const made = newReplicaId();
  writeFileSync(file, `${made}\n`, { mode: 0o600 });
  return made;
};

/** This process's replica id (DSH_REPLICA_ID, else its data directory's), its lease holder and its event fence. */
export const replicaIdentity = (
  config: { replicaId?: string | undefined; dataDir: string },
  /** False where no replicas run (the embedded store): nothing is written to the data directory. */
  replicas: boolean,
): ReplicaIdentity => {
  const replicaId = config.replicaId ?? (replicas ? dataDirReplicaId(config.dataDir) : newReplicaId());
  const holder = `${replicaId}:${randomBytes(4).toString('hex')}`;
  return { replicaId, holder, fence: createFence(holder) };
};

/**
 * The ownership of agent families, when the store keeps replicas (PostgreSQL); and the store the
 * agent service gets, which tells the ownership about every agent it creates (a child joins its
 * parent's family at once, so its first events are fenced too).
 */
export const ownershipOf = (
  store: Store,
  identity: ReplicaIdentity,
  leaseMs: number,
  onError: (error: unknown) => void,
): { ownership: Ownership | undefined; store: Store } => {
  if (store.leases === undefined) return { ownership: undefined, store };
  const ownership = createOwnership({
    replicaId: identity.holder,
    replicaOf: identity.replicaId,
    leases: store.leases,
    agents: store.agents,
    events: store.events,
    fence: identity.fence,
    ttlMs: leaseMs,
    renewMs: Math.max(200, Math.floor(leaseMs / 5)),
    onError,
  });
  const agents = store.agents;
  const told: Store = {
    ...store,
    agents: {
      ...agents,
      async create(input) {
        const record = await agents.create(input);
        ownership.created(record);
        return record;
      },
    },
  };
  return { ownership, store: told };
};

/**
 * The app's replica slot (api/forward): forwarded requests checked with the key every replica
 * derives from the store's secrets key, and each request about an agent served here or forwarded
 * to its family's owner, as the ownership decides.
 */
export const replicaDeps = (
  ownership: Ownership,
  identity: ReplicaIdentity,
  store: Store,
  settings: { secretsKey: Buffer; proxies: readonly string[]; leaseMs: number },
): ReplicaDeps => {
  const key = replicaKey(settings.secretsKey);
  const proxies = settings.proxies;
  const leases = store.leases;
  return {
    key,
    // Keyed batches are claimed under the lease holder; one whose holder renewed within a lease still runs.
    ...(leases === undefined
      ? {}
      : {
          holder: {
            id: identity.holder,
            alive: (holder: string) => leases.alive(holder, settings.leaseMs),
          },
        }),
    route: (c, { forwarded, agentId }) =>
      agentId === undefined ? LOCAL : ownership.route(c.get('tenant').id, agentId, { forwarded }),
    forwarder: createForwarder({
      replica: { id: identity.replicaId, key },
      ...(proxies.length === 0 ? {} : { trustedProxies: trustedProxies(proxies) }),
    }),
  };
};

const LOCAL = { kind: 'local' } as const;

/** What taking a family over and losing one do to the agent service. */
export const wireOwnership = (
  ownership: Ownership,
  { agents, store }: { agents: AgentService; store: Store },
  log: (line: string) => void,
): void => {
  ownership.onTakeover(async ({ familyId, agentIds, epoch }) => {
    log(`family ${familyId}: taken at epoch ${epoch}`);
    // The calls its former owner left running end INTERRUPTED, before anything of it runs here.
    const repaired = repairLine(
      await repairInterruptedCalls(store.events, { sessionIds: agentIds, requests: store.requests }),
    );
    if (repaired !== undefined) log(`family ${familyId}: ${repaired}`);
    // Plugins the family ran on its former owner run here now.
    const started = await agents.resumePlugins(
      (id, e) => log(`could not start plugin ${id} again: ${String(e)}`),
      new Set(agentIds),
    );
    if (started > 0) log(`family ${familyId}: started ${started} plugin(s) again`);
    // Its child runs left pending are watched here now (settling one writes to its parent's session).
    const watched = await agents.teams().resume(new Set(agentIds));
    if (watched > 0) log(`family ${familyId}: watching ${watched} child run(s) again`);
  });
  ownership.onLost(({ familyId, tenantId, agentIds }) => {
    log(`family ${familyId} is run by another replica now; its work here stops`);
    agents
      .release(tenantId, agentIds)
      .catch((e: unknown) => log(`releasing family ${familyId}: ${String(e)}`));
  });
};
