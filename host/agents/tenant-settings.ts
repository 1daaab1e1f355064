// Each tenant's settings as the agent service reads them (GET/PUT /v1/settings): the pause
// settings, the checkpoint bounds and the log's retention. The store keeps one JSON document per
// tenant (store/tenant-settings.ts); this module
// owns its meaning: what a missing or partial document means (the defaults), and a cache with a
// short lifetime, so that a call or an idle sweep costs no read.
// Invariants: a tenant that set nothing gets DEFAULT_TENANT_SETTINGS; a document is read back
// field by field, so one written by a later build with more fields still reads; a put is seen at
// once in this process, by other replicas on the same database within CACHE_MS.
import type { JsonValue } from '../json.ts';
import type { TenantSettingsStore } from '../store/tenant-settings.ts';

/** What pausing means for a tenant's agents. */
export interface PauseSettings {
  /** Seconds an agent may stay idle (no call, no running job) before it is paused; 0: never. */
  idleSeconds: number;
  /** A call to a paused agent: `resume` it on the way (the call pays the start), or `refuse` (AGENT_PAUSED). */
  onCall: 'resume' | 'refuse';
}

/** What each agent keeps to roll its file calls back (host/agents/checkpoints/). */
export interface CheckpointSettings {
  /** Bytes of pre-images an agent keeps; its oldest checkpoints are dropped past it. */
  maxBytes: number;
  /** Checkpoints an agent keeps; the oldest are dropped past it. 0: no tracking. */
  maxCount: number;
  /** Whether its agents' models are offered the `checkpoint` and `rollback` tools. */
  tools: boolean;
  /** A workspace snapshot before each `bash` call, kept as its checkpoint (loop workspaces only). */
  snapshotBash: boolean;
}

/** How long the tenant's durable log is kept (host/tenants/retention.ts applies it). */
export interface LogSettings {
  /** Days an event is kept; 0: no limit of the tenant's own (the operator's maximum still applies). */
  retentionDays: number;
  /** Bytes the log is cut down to, oldest events first; 0: no limit of its own (the budget still refuses). */
  retentionBytes: number;
  /** Hours a deleted agent's log is kept after its deletion (then it goes whole). */
  deletedAgentHours: number;
}

export interface TenantSettings {
  pause: PauseSettings;
  checkpoints: CheckpointSettings;
  log: LogSettings;
}

/**
 * Idle pauses off (the service's own idle stop still applies), calls resume a paused agent; 256
 * checkpoints or 64 MiB per agent, no checkpoint tools; the log kept without limit of its own, a
 * deleted agent's for a week.
 */
export const DEFAULT_TENANT_SETTINGS: TenantSettings = {
  pause: { idleSeconds: 0, onCall: 'resume' },
  checkpoints: { maxBytes: 64 * 1024 * 1024, maxCount: 256, tools: false, snapshotBash: false },
  log: { retentionDays: 0, retentionBytes: 0, deletedAgentHours: 168 },
};

/** A whole number >= 0, else the default. */
const count = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : fallback;

/** How long a tenant's settings are answered from memory (other replicas' puts show within it). */
export const CACHE_MS = 10_000;

/** A stored document read field by field, the defaults where it says nothing valid. */
export function settingsOf(document: JsonValue | undefined): TenantSettings {
  const doc = document as
    | {
        pause?: Partial<Record<keyof PauseSettings, unknown>>;
        log?: Partial<Record<keyof LogSettings, unknown>>;
      }
    | undefined;
  const pause = doc?.pause;
  const log = DEFAULT_TENANT_SETTINGS.log;
  const idle = pause?.idleSeconds;
  const checkpoints = (
    document as { checkpoints?: Partial<Record<keyof CheckpointSettings, unknown>> } | undefined
  )?.checkpoints;
  const fallback = DEFAULT_TENANT_SETTINGS.checkpoints;
  return {
    pause: {
      idleSeconds:
        typeof idle === 'number' && Number.isInteger(idle) && idle >= 0
          ? idle
          : DEFAULT_TENANT_SETTINGS.pause.idleSeconds,
      onCall: pause?.onCall === 'refuse' ? 'refuse' : 'resume',
    },
    checkpoints: {
      maxBytes: count(checkpoints?.maxBytes, fallback.maxBytes),
      maxCount: count(checkpoints?.maxCount, fallback.maxCount),
      tools: checkpoints?.tools === true,
      snapshotBash: checkpoints?.snapshotBash === true,
    },
    log: {
      retentionDays: count(doc?.log?.retentionDays, log.retentionDays),
      retentionBytes: count(doc?.log?.retentionBytes, log.retentionBytes),
      deletedAgentHours: count(doc?.log?.deletedAgentHours, log.deletedAgentHours),
    },
  };
}

export interface TenantSettingsReader {
  get(tenantId: string): Promise<TenantSettings>;
  /** From memory only (undefined when not read lately; a read then starts in the background). */
  peek(tenantId: string): TenantSettings | undefined;
  put(tenantId: string, settings: TenantSettings): Promise<TenantSettings>;
}

export function createTenantSettings(
  store: TenantSettingsStore | undefined,
  options: { now?: () => number; onError?: (error: unknown) => void } = {},
): TenantSettingsReader {
  const now = options.now ?? Date.now;
  const known = new Map<string, { settings: TenantSettings; until: number }>();
  const reading = new Map<string, Promise<TenantSettings>>();

  function get(tenantId: string): Promise<TenantSettings> {
    const hit = known.get(tenantId);
    if (hit !== undefined && hit.until > now()) return Promise.resolve(hit.settings);
    let pending = reading.get(tenantId);
    if (pending === undefined) {
      pending = (async () => {
        const settings = settingsOf(await store?.get(tenantId));
        known.set(tenantId, { settings, until: now() + CACHE_MS });
        return settings;
      })().finally(() => reading.delete(tenantId));
      reading.set(tenantId, pending);
    }
    return pending;
  }

  return {
    get,
    peek(tenantId) {
      const hit = known.get(tenantId);
      if (hit === undefined || hit.until <= now()) get(tenantId).catch(options.onError ?? (() => undefined));
      return hit?.settings;
    },
    async put(tenantId, settings) {
      const kept = settingsOf(settings as unknown as JsonValue);
      await store?.put(tenantId, kept as unknown as JsonValue);
      known.set(tenantId, { settings: kept, until: now() + CACHE_MS });
      return kept;
    },
  };
}
