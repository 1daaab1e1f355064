// Each tenant's `skill` tool: a registry layer per tenant and preset between the preset and the
// tenant's agents (global → preset → tenant → agent), holding a `skill` definition whose
// description lists that tenant's catalog. A catalog change re-makes it in every layer of the
// tenant and appends a `tools.change` event to each of the tenant's agents' logs, so clients and
// the MCP endpoint list the tools again. Invariants: a tenant layer registers `skill` only when its
// preset sees the global one (the preset's allow-list decides, as for every tool), and its agents'
// restrictions mask it like any inherited tool; it holds nothing else.
// The catalog is read asynchronously: a tenant's listing is loaded once per process when its first
// layer is made (and again at every change), and its layers get `skill` when it arrives; ready()
// settles only then, and the runtime awaits it before every resolve, so no step sees a tenant
// layer without its `skill`. A listing older than the one applied is never applied over it.
// The `tools.change` events follow when the store has listed the tenant's agents.
// A change made by another process sharing the store (its `config` wake-up) only reloads the
// listing here (reload): that process appended the `tools.change` events already.
import type { EventLog } from '../store/types.ts';
import { type SkillEntry, type SkillPort, skillTool } from '../tools/builtin/skill.ts';
import type { Disposer, ToolScope } from '../tools/index.ts';
import type { AgentScope } from '../tools/types.ts';

export interface SkillLayers {
  /** The scope an agent's own scope is a child of: its tenant's layer under its preset. */
  parentOf(preset: ToolScope, agent: AgentScope): ToolScope;
  /** Settles once the agent's tenant layers hold `skill` as its catalog listed it (loaded once). */
  ready(agent: AgentScope): Promise<void>;
  /** Re-makes the tenant's `skill` tools from its catalog and tells its agents' clients. */
  refresh(tenantId: string): Promise<void>;
  /** Re-makes them only (the catalog changed in another process, which told the clients). */
  reload(tenantId: string): Promise<void>;
  /** reload() for every tenant held here (wake-ups may have been missed). */
  reloadAll(): Promise<void>;
}

interface TenantLayer {
  preset: ToolScope;
  scope: ToolScope;
  registered: Disposer | undefined;
}

/** One tenant's layers and the catalog listing they show. */
interface TenantLayers {
  layers: Map<ToolScope, TenantLayer>;
  /** The listing applied last; undefined until the first load arrives. */
  listing: SkillEntry[] | undefined;
  /** The first load (retried by the next ready() when it failed). */
  loaded: Promise<void> | undefined;
  /** Loads started and the newest one applied: a slower older load never undoes a newer one. */
  started: number;
  applied: number;
}

export interface SkillLayersOptions {
  skills: SkillPort;
  events: EventLog;
  /** The tenant's agents (their sessions get the `tools.change`). */
  agentsOf: (tenantId: string) => Promise<{ sessionId: string }[]>;
}

export function createSkillLayers(options: SkillLayersOptions): SkillLayers {
  const { skills } = options;
  const tenants = new Map<string, TenantLayers>();

  function install(layer: TenantLayer, listing: SkillEntry[]): void {
    layer.registered?.();
    layer.registered =
      layer.preset.get('skill') === undefined ? undefined : layer.scope.register(skillTool(skills, listing));
  }

  /** Reads the tenant's listing and puts it in every layer of the tenant, unless a newer one was. */
  async function load(tenant: TenantLayers, tenantId: string): Promise<void> {
    const seq = ++tenant.started;
    const listing = await skills.list(tenantId);
    if (seq < tenant.applied) return;
    tenant.applied = seq;
    tenant.listing = listing;
    for (const layer of tenant.layers.values()) install(layer, listing);
  }

  function tenantOf(tenantId: string): TenantLayers {
    let tenant = tenants.get(tenantId);
    if (tenant === undefined) {
      tenant = { layers: new Map(), listing: undefined, loaded: undefined, started: 0, applied: 0 };
      tenants.set(tenantId, tenant);
    }
    return tenant;
  }

  function firstLoad(tenant: TenantLayers, tenantId: string): Promise<void> {
    if (tenant.loaded === undefined) {
      const loaded = load(tenant, tenantId);
      tenant.loaded = loaded;
      loaded.catch(() => {
        if (tenant.loaded === loaded) tenant.loaded = undefined;
      });
    }
    return tenant.loaded;
  }

  function parentOf(preset: ToolScope, agent: AgentScope): ToolScope {
    const tenantId = agent.services.tenantId;
    if (typeof tenantId !== 'string') return preset;
    const tenant = tenantOf(tenantId);
    let layer = tenant.layers.get(preset);
    if (layer === undefined) {
      layer = { preset, scope: preset.child(`tenant:${tenantId}`), registered: undefined };
      if (tenant.listing !== undefined) install(layer, tenant.listing);
      tenant.layers.set(preset, layer);
    }
    // ready() reports a failure of this load; the next one retries it.
    firstLoad(tenant, tenantId).catch(() => {});
    return layer.scope;
  }

  async function ready(agent: AgentScope): Promise<void> {
    const tenantId = agent.services.tenantId;
    if (typeof tenantId !== 'string') return;
    const tenant = tenants.get(tenantId);
    if (tenant === undefined || tenant.listing !== undefined) return;
    await firstLoad(tenant, tenantId);
  }

  async function refresh(tenantId: string): Promise<void> {
    const tenant = tenants.get(tenantId);
    if (tenant !== undefined) await load(tenant, tenantId);
    try {
      const sessions = await options.agentsOf(tenantId);
      if (sessions.length === 0) return;
      await options.events.append(
        sessions.map(({ sessionId }) => ({
          sessionId,
          type: 'tools.change',
          surface: 'log-only' as const,
          data: { added: [], removed: [], changed: ['skill'] },
        })),
      );
    } catch {
      // over the tenant's log budget, or the store failed to list: the tools changed all the same
    }
  }

  async function reload(tenantId: string): Promise<void> {
    const tenant = tenants.get(tenantId);
    // Never loaded here: its first layer loads the listing as it is then.
    if (tenant !== undefined && tenant.loaded !== undefined) await load(tenant, tenantId);
  }

  async function reloadAll(): Promise<void> {
    await Promise.all([...tenants.keys()].map((tenantId) => reload(tenantId)));
  }

  return { parentOf, ready, refresh, reload, reloadAll };
}
