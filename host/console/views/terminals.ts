// An agent's terminals: each with its state and an Attach link (running ones) and a Close button,
// and the form that opens a new one. Commands and names are text: hono/jsx escapes them.
import type { ConsoleSession } from '../sessions.ts';
import { csrfField, h, type Node, table, when } from './layout.ts';

/** A terminal as GET /v1/agents/:id/terminals lists it (the fields the console reads). */
export interface TerminalView {
  id: string;
  name: string | null;
  command: string[];
  status: 'running' | 'exited';
  exitCode: number | null;
  startedAt: number;
}

export const terminalsView = (session: ConsoleSession, id: string, terminals: TerminalView[]): Node[] => {
  const base = `/console/agents/${encodeURIComponent(id)}`;
  return [
    h(
      'form',
      { method: 'post', action: `${base}/terminals`, class: 'action', id: 'open-terminal' },
      csrfField(session),
      h(
        'label',
        null,
        'program and arguments',
        h('input', { type: 'text', name: 'command', size: 30, placeholder: 'bash' }),
      ),
      h('label', null, 'name (optional)', h('input', { type: 'text', name: 'name', size: 16 })),
      h('button', { type: 'submit' }, 'Open a terminal'),
    ),
    terminals.length === 0
      ? h('p', { class: 'muted', id: 'no-terminals' }, 'No terminals.')
      : table(
          ['terminal', 'name', 'command', 'state', 'started', '', ''],
          terminals.map((t) =>
            h(
              'tr',
              { 'data-terminal': t.id },
              h('td', null, h('code', null, t.id)),
              h('td', null, t.name ?? ''),
              h('td', null, h('code', null, t.command.join(' '))),
              h('td', null, t.status === 'running' ? 'running' : `exited ${t.exitCode ?? ''}`),
              h('td', null, when(t.startedAt)),
              h(
                'td',
                null,
                t.status === 'running'
                  ? h(
                      'a',
                      { href: `${base}/terminal?tid=${encodeURIComponent(t.id)}`, class: 'attach' },
                      'Attach',
                    )
                  : null,
              ),
              h(
                'td',
                null,
                h(
                  'form',
                  {
                    method: 'post',
                    action: `${base}/terminals/${encodeURIComponent(t.id)}/close`,
                    class: 'inline',
                  },
                  csrfField(session),
                  h('button', { type: 'submit', class: 'danger' }, 'Close'),
                ),
              ),
            ),
          ),
        ),
  ];
};
