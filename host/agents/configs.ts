// The agents' stored configs as the tools of the global layer read them (web_fetch's condition,
// run_code's budgets, session access), without a store read per step. Invariants: a config is fixed
// when its agent is created (no store update touches it), so the agent's scope carries the one read
// with its record when the agent is loaded (host/agents/service/live.ts puts it in
// `services.agentConfig`); a condition is synchronous and reads it there. A scope that carries none
// (no agent service behind it) has no config: fetch off, default budgets, tenant-wide session access.
import type { AgentScope } from '../tools/types.ts';
import type { AgentConfig } from './types.ts';

declare module '../tools/types.ts' {
  interface ToolServices {
    /** The agent's config as stored at its creation. */
    agentConfig?: AgentConfig;
  }
}

export type ConfigOf = (agent: AgentScope) => AgentConfig | undefined;

/** The config the agent's scope was loaded with, if any. */
export const configOf: ConfigOf = (agent) => agent.services.agentConfig;
