// The egress side of an agent's tools: web_fetch and web_search registered in the service's global
// layer over the web access (host/egress/web.ts), each with its condition, evaluated once per step:
// web_fetch for agents created with `fetch: true` (the standard preset's `fetch: false` default),
// web_search where the agent's tenant has a search provider (its own or the operator's). Which
// presets name them is the presets' business.
import type { WebAccess } from '../egress/web.ts';
import type { AgentStore } from '../store/index.ts';
import { type WebPort, webFetchTool, webSearchTool } from '../tools/builtin/index.ts';
import type { Disposer } from '../tools/disposer.ts';
import type { ToolScope } from '../tools/registry.ts';
import type { AgentScope } from '../tools/types.ts';
import type { ConfigOf } from './configs.ts';
import type { AgentConfig } from './types.ts';

/** Where an agent's egress rules come from: its stored config (one awaited read per admission). */
export function agentEgressRules(agents: Pick<AgentStore, 'get'>) {
  return async (tenantId: string, agentId: string) =>
    ((await agents.get(tenantId, agentId))?.config as AgentConfig | null | undefined)?.egress?.allow;
}

export function registerWebTools(
  scope: ToolScope,
  options: { web: WebAccess; configOf: ConfigOf },
): Disposer[] {
  const { web, configOf } = options;
  const port: WebPort = {
    fetchPage: (caller, url, signal) => web.fetchPage({ ...caller, via: 'web_fetch' }, url, signal),
    search: (caller, queries, signal) => web.search({ ...caller, via: 'web_search' }, queries, signal),
    timeoutMs: web.timeoutMs,
  };
  const tenantOf = (agent: AgentScope): string | undefined =>
    typeof agent.services.tenantId === 'string' ? agent.services.tenantId : undefined;
  const fetchEnabled = ({ agent }: { agent: AgentScope }): boolean => configOf(agent)?.fetch === true;
  const searchEnabled = async ({ agent }: { agent: AgentScope }): Promise<boolean> => {
    const tenantId = tenantOf(agent);
    return tenantId !== undefined && (await web.searchAvailable(tenantId));
  };
  return [
    scope.register(webSearchTool(port), { when: searchEnabled }),
    scope.register(webFetchTool(port), { when: fetchEnabled }),
  ];
}
