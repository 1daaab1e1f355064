// The tenant's agents: one row each with preset, mode, links, sandbox limits and budgets.
import { h, type Node, table, when } from './layout.ts';

/** An agent as GET /v1/agents shows it (the fields the console reads). */
export interface AgentView {
  id: string;
  preset: string;
  mode: string;
  config: Record<string, unknown>;
  parentId?: string;
  role?: string;
  name?: string;
  depth?: number;
  createdAt: number;
}

/** "memoryMb 512 · cpus 1" from an object of limits; "defaults" when none were asked for. */
export const limitsText = (value: unknown): string => {
  if (value === null || typeof value !== 'object') return 'defaults';
  const parts = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${k} ${String(v)}`);
  return parts.length === 0 ? 'defaults' : parts.join(' · ');
};

export const agentLink = (id: string): Node =>
  h('a', { href: `/console/agents/${encodeURIComponent(id)}` }, id);

export const agentRows = (agents: AgentView[]): Node[] =>
  agents.map((a) =>
    h(
      'tr',
      { 'data-agent': a.id },
      h('td', null, agentLink(a.id)),
      h('td', null, a.preset),
      h('td', null, a.mode),
      h(
        'td',
        null,
        a.role === undefined
          ? 'top-level'
          : `${a.role} of ${a.parentId ?? '?'}${a.name ? ` (${a.name})` : ''}`,
      ),
      h('td', null, limitsText(a.config.sandbox)),
      h('td', null, limitsText(a.config.codeMode)),
      h('td', null, when(a.createdAt)),
    ),
  );

export const agentsTable = (agents: AgentView[]): Node =>
  agents.length === 0
    ? h('p', null, 'No agents yet. Create one with POST /v1/agents.')
    : table(['agent', 'preset', 'mode', 'role', 'sandbox', 'code budgets', 'created'], agentRows(agents));
