// The agents' stored configs as the tools of the global layer read them (web_fetch's condition,
// run_code's budgets, session access), without a row read per step. Invariants: a config is fixed
// when its agent is created (no store update touches it), so one read serves until the entry is
// forgotten (the oldest first past CONFIGS_MAX); an id of another tenant, an unknown or a deleted
// agent is answered by the store (none) and never remembered. A remembered config may outlive its
// agent's deletion; nothing runs for a deleted agent (host/agents/service/deletion.ts), so nothing
// asks.
import type { AgentStore } from '../store/index.ts';
import type { AgentConfig } from './types.ts';

/** The most configs remembered at once. */
const CONFIGS_MAX = 1024;

export type ConfigOf = (tenantId: string, agentId: string) => AgentConfig | undefined;

export function rememberConfigs(agents: Pick<AgentStore, 'get'>): ConfigOf {
  const known = new Map<string, { tenantId: string; config: AgentConfig }>();
  return (tenantId, agentId) => {
    const entry = known.get(agentId);
    if (entry !== undefined && entry.tenantId === tenantId) return entry.config;
    const record = agents.get(tenantId, agentId);
    if (record === undefined) return undefined;
    const config = (record.config ?? {}) as AgentConfig;
    if (known.size >= CONFIGS_MAX) known.delete(known.keys().next().value as string);
    known.set(agentId, { tenantId, config });
    return config;
  };
}
