// Each tenant's `skill` tool: a registry layer per tenant and preset between the preset and the
// tenant's agents (global → preset → tenant → agent), holding a `skill` definition whose
// description lists that tenant's catalog. A catalog change re-makes it in every layer of the
// tenant and appends a `tools.change` event to each of the tenant's agents' logs, so clients and
// the MCP endpoint list the tools again. Invariants: a tenant layer registers `skill` only when its
// preset sees the global one (the preset's allow-list decides, as for every tool), and its agents'
// restrictions mask it like any inherited tool; it holds nothing else.
import type { EventLog } from '../store/types.ts';
import { type SkillPort, skillTool } from '../tools/builtin/skill.ts';
import type { Disposer, ToolScope } from '../tools/index.ts';
import type { AgentScope } from '../tools/types.ts';

export interface SkillLayers {
  /** The scope an agent's own scope is a child of: its tenant's layer under its preset. */
  parentOf(preset: ToolScope, agent: AgentScope): ToolScope;
  /** Re-makes the tenant's `skill` tools from its catalog and tells its agents' clients. */
  refresh(tenantId: string): void;
}

interface TenantLayer {
  preset: ToolScope;
  scope: ToolScope;
  registered: Disposer | undefined;
}

export interface SkillLayersOptions {
  skills: SkillPort;
  events: EventLog;
  /** The tenant's agents (their sessions get the `tools.change`). */
  agentsOf: (tenantId: string) => { sessionId: string }[];
}

export function createSkillLayers(options: SkillLayersOptions): SkillLayers {
  const { skills } = options;
  const tenants = new Map<string, Map<ToolScope, TenantLayer>>();

  function install(layer: TenantLayer, tenantId: string): void {
    layer.registered?.();
    layer.registered =
      layer.preset.get('skill') === undefined
        ? undefined
        : layer.scope.register(skillTool(skills, skills.list(tenantId)));
  }

  function parentOf(preset: ToolScope, agent: AgentScope): ToolScope {
    const tenantId = agent.services.tenantId;
    if (typeof tenantId !== 'string') return preset;
    let layers = tenants.get(tenantId);
    if (layers === undefined) {
      layers = new Map();
      tenants.set(tenantId, layers);
    }
    let layer = layers.get(preset);
    if (layer === undefined) {
      layer = { preset, scope: preset.child(`tenant:${tenantId}`), registered: undefined };
      install(layer, tenantId);
      layers.set(preset, layer);
    }
    return layer.scope;
  }

  function refresh(tenantId: string): void {
    for (const layer of tenants.get(tenantId)?.values() ?? []) install(layer, tenantId);
    const sessions = options.agentsOf(tenantId);
    if (sessions.length === 0) return;
    options.events
      .append(
        sessions.map(({ sessionId }) => ({
          sessionId,
          type: 'tools.change',
          surface: 'log-only' as const,
          data: { added: [], removed: [], changed: ['skill'] },
        })),
      )
      .catch(() => {
        // over the tenant's log budget: the tools changed all the same
      });
  }

  return { parentOf, refresh };
}
