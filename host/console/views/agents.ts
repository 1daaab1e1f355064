// The tenant's agents: one row each with preset, mode, links, sandbox limits and budgets, and its
// state on the instance that answered (sandbox, batches running, last call).
import { bytesText, durationText } from './format.ts';
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
  /** Its state on the instance that answered (GET /v1/agents and /v1/agents/:id). */
  state?: AgentStateView;
}

/** `state` of an agent as the API shows it. */
export interface AgentStateView {
  sandbox: string;
  batches: number;
  lastCallAt?: number;
}

/** "ready · 2 running" */
export const stateText = (state: AgentStateView | undefined): string =>
  state === undefined ? '' : `${state.sandbox}${state.batches > 0 ? ` · ${state.batches} running` : ''}`;

/** "5.03 MiB of 64.0 MiB (8%)" */
export const usedText = (used: { usedBytes: number; limitBytes: number } | undefined): string =>
  used === undefined
    ? 'not measured'
    : `${bytesText(used.usedBytes)} of ${bytesText(used.limitBytes)}` +
      (used.limitBytes > 0 ? ` (${Math.round((used.usedBytes / used.limitBytes) * 100)}%)` : '');

/** "memory 512 MiB · 1 CPU" from an object of limits; "defaults" when none were asked for. */
export const limitsText = (value: unknown): string => {
  if (value === null || typeof value !== 'object') return 'defaults';
  const parts = Object.entries(value as Record<string, unknown>).map(([k, v]) => limitText(k, v));
  return parts.length === 0 ? 'defaults' : parts.join(' · ');
};

/** One limit as people read it ("memory 256 MiB", "CPU 2000 ms"); an unknown one as it is named. */
const limitText = (name: string, value: unknown): string => {
  const n = typeof value === 'number' ? value : Number.NaN;
  if (Number.isNaN(n)) return `${name} ${String(value)}`;
  switch (name) {
    case 'memoryMb':
      return `memory ${bytesText(n * 1024 * 1024)}`;
    case 'diskMb':
      return `disk ${bytesText(n * 1024 * 1024)}`;
    case 'cpus':
      return `${n} CPU${n === 1 ? '' : 's'}`;
    case 'pids':
      return `${n} processes`;
    case 'cpuMs':
      return `CPU ${durationText(n)}`;
    case 'wallMs':
      return `wall ${durationText(n)}`;
    default:
      return `${name} ${n}`;
  }
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
      h('td', { 'data-state': a.state?.sandbox ?? '' }, stateText(a.state)),
      h('td', { 'data-last-call': '' }, lastCallText(a.state)),
      h('td', null, when(a.createdAt)),
    ),
  );

/** When the agent's last call was ('' before its first). */
export const lastCallText = (state: AgentStateView | undefined): string =>
  state?.lastCallAt === undefined ? '' : when(state.lastCallAt);

/** The list, whose state cells assets/refresh.js refreshes from `refresh` (agents.json). */
export const agentsTable = (agents: AgentView[], refresh = '/console/agents.json'): Node =>
  agents.length === 0
    ? h('p', { id: 'no-agents' }, 'No agents yet: create one above, or with POST /v1/agents.')
    : h(
        'section',
        { id: 'agents', 'data-refresh': refresh },
        table(
          ['agent', 'preset', 'mode', 'role', 'sandbox', 'code budgets', 'state', 'last call', 'created'],
          agentRows(agents),
        ),
      );
