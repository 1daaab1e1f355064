// One agent: its settings, pending host requests (answerable here), the live audit timeline with
// its filters and export, and the ways to its files and terminals. The timeline's rows are added
// by assets/timeline.js from the event stream, as text.
import type { ConsoleSession } from '../sessions.ts';
import { deleteAgentForm } from './actions.ts';
import { type AgentStateView, type AgentView, limitsText, stateText, usedText } from './agents.ts';
import { percentText } from './format.ts';
import { h, type Node, table, when } from './layout.ts';
import { type RequestView, requestForm } from './requests.ts';

/** Event families the timeline filter offers (an event's type up to its first dot). */
export const FAMILIES = [
  'tool',
  'request',
  'policy',
  'egress',
  'agent',
  'session',
  'message',
  'tools',
  'mailbox',
  'team',
  'schedule',
];

/**
 * Filters and the live list. `source` is the agent's SSE URL (`stream`) or the tenant timeline's
 * polled JSON (`poll`); `exportUrl` the NDJSON download, when there is one.
 */
export const timeline = (source: { stream: string } | { poll: string }, exportUrl?: string): Node =>
  h(
    'section',
    {
      id: 'timeline',
      ...('stream' in source ? { 'data-stream': source.stream } : { 'data-poll': source.poll }),
      ...(exportUrl === undefined ? {} : { 'data-export': exportUrl }),
    },
    h('h2', null, 'Audit timeline'),
    h(
      'form',
      { id: 'filters', class: 'filters' },
      h(
        'label',
        null,
        'family ',
        h(
          'select',
          { name: 'family' },
          h('option', { value: '' }, 'all'),
          ...FAMILIES.map((f) => h('option', { value: f }, f)),
        ),
      ),
      h(
        'label',
        null,
        'surface ',
        h(
          'select',
          { name: 'surface' },
          h('option', { value: '' }, 'all'),
          h('option', { value: 'current' }, 'current'),
          h('option', { value: 'log-only' }, 'log-only'),
        ),
      ),
      h('label', null, 'call ', h('input', { name: 'call', type: 'text', size: 14 })),
      h('label', null, 'text ', h('input', { name: 'text', type: 'search', size: 18 })),
      exportUrl === undefined
        ? null
        : h('a', { id: 'export', href: exportUrl, download: '' }, 'Export NDJSON'),
      h('span', { id: 'stream-state', class: 'muted' }, 'connecting…'),
    ),
    h('ol', { id: 'events', class: 'events' }),
  );

/** GET /v1/agents/:id/usage as the console reads it. */
export interface UsageView {
  state: AgentStateView;
  log: { events: number; calls: number; lastEventAt?: number };
  disk?: { usedBytes: number; limitBytes: number };
  memory?: { usedBytes: number; limitBytes: number };
  cpuPercent?: number;
}

/** The usage table's cells by name, as text: the page renders them and usage.json refreshes them. */
export const usageCells = (usage: UsageView): Record<string, string> => ({
  state: stateText(usage.state),
  lastCall: usage.state.lastCallAt === undefined ? '' : when(usage.state.lastCallAt),
  events: String(usage.log.events),
  calls: String(usage.log.calls),
  lastEvent: usage.log.lastEventAt === undefined ? '' : when(usage.log.lastEventAt),
  disk: usedText(usage.disk),
  memory: usedText(usage.memory),
  cpu: usage.cpuPercent === undefined ? 'not measured' : percentText(usage.cpuPercent),
});

const USAGE_HEAD: [string, string][] = [
  ['state', 'state'],
  ['lastCall', 'last call'],
  ['events', 'events'],
  ['calls', 'tool calls'],
  ['lastEvent', 'last event'],
  ['disk', 'disk'],
  ['memory', 'memory'],
  ['cpu', 'CPU'],
];

/**
 * The agent's state and usage: one row, each measure in its own cell, refreshed in place every few
 * seconds by assets/refresh.js from `data-refresh` (the usage.json of this agent).
 */
export const usageTable = (usage: UsageView, refresh?: string): Node => {
  const cells = usageCells(usage);
  return h(
    'section',
    { id: 'usage', ...(refresh === undefined ? {} : { 'data-refresh': refresh }) },
    h('h2', null, 'State and usage'),
    table(
      USAGE_HEAD.map(([, label]) => label),
      [
        h(
          'tr',
          null,
          ...USAGE_HEAD.map(([name]) =>
            h(
              'td',
              name === 'state'
                ? { 'data-state': usage.state.sandbox, 'data-usage': name }
                : { 'data-usage': name },
              cells[name],
            ),
          ),
        ),
      ],
    ),
  );
};

export const agentPage = (
  agent: AgentView,
  requests: RequestView[],
  session: ConsoleSession,
  usage?: UsageView,
): Node[] => {
  const base = `/console/agents/${encodeURIComponent(agent.id)}`;
  return [
    table(
      ['preset', 'mode', 'sandbox', 'code budgets', 'created'],
      [
        h(
          'tr',
          null,
          h('td', null, agent.preset),
          h('td', null, agent.mode),
          h('td', null, limitsText(agent.config.sandbox)),
          h('td', null, limitsText(agent.config.codeMode)),
          h('td', null, when(agent.createdAt)),
        ),
      ],
    ),
    ...(usage === undefined ? [] : [usageTable(usage, `${base}/usage.json`)]),
    h(
      'div',
      { class: 'links' },
      h('a', { href: `${base}/files?path=.`, id: 'files-link' }, 'Files'),
      h('a', { href: `${base}/run`, id: 'run-link' }, 'Run a command or a call'),
      h('a', { href: `${base}/terminals`, id: 'terminals-link' }, 'Terminals'),
      h(
        'form',
        { method: 'get', action: `${base}/terminal`, class: 'inline' },
        h('input', { type: 'text', name: 'tid', placeholder: 'terminal id', required: true, size: 12 }),
        h('button', { type: 'submit' }, 'Attach terminal'),
      ),
    ),
    // Filled by assets/timeline.js from terminal_open results in the log.
    h('ul', { id: 'terminals', class: 'terminals', 'data-agent': agent.id }),
    h(
      'section',
      { id: 'requests', 'data-agent': agent.id },
      h('h2', null, 'Pending requests'),
      h(
        'p',
        { id: 'no-requests', class: 'muted', ...(requests.length > 0 ? { hidden: true } : {}) },
        'None.',
      ),
      ...requests.map((r) => requestForm(agent.id, r, session)),
    ),
    timeline({ stream: `${base}/events/stream` }, `${base}/events.ndjson`),
    h('h2', null, 'Delete'),
    deleteAgentForm(session, agent.id),
  ];
};
