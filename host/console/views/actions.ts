// The forms of the tenant's actions: create an agent (preset, mode, limits), delete one, run a
// command or a tool call and show what came back. Every form carries the session's CSRF token;
// what the API answers is shown as text (hono/jsx escapes it).
import type { ConsoleSession } from '../sessions.ts';
import { durationText } from './format.ts';
import { csrfField, h, type Node, table } from './layout.ts';

/** The choices the create form offers, as the API's description lists them. */
export interface AgentChoices {
  presets: string[];
  modes: string[];
}

/** A labelled number field of the create form, empty by default (the API's default). */
const numberField = (name: string, label: string, min: number, step = 1): Node =>
  h('label', null, label, h('input', { type: 'number', name, min, step, size: 8, placeholder: 'default' }));

const select = (name: string, label: string, options: string[], first: string): Node =>
  h(
    'label',
    null,
    label,
    h(
      'select',
      { name },
      h('option', { value: '' }, first),
      ...options.map((o) => h('option', { value: o }, o)),
    ),
  );

export const createAgentForm = (session: ConsoleSession, choices: AgentChoices): Node =>
  h(
    'form',
    { method: 'post', action: '/console/agents', class: 'action', id: 'create-agent' },
    csrfField(session),
    select('preset', 'preset', choices.presets, 'standard (default)'),
    select('mode', 'mode', choices.modes, "the preset's"),
    numberField('memoryMb', 'memory (MiB)', 64),
    numberField('cpus', 'CPUs', 0.1, 0.1),
    numberField('diskMb', 'disk (MiB)', 16),
    numberField('pids', 'processes', 16),
    numberField('cpuMs', 'code CPU (ms)', 10),
    numberField('wallMs', 'code wall (ms)', 100),
    h('button', { type: 'submit' }, 'Create agent'),
  );

type Form = Record<string, string | File | (string | File)[]>;

/** A field's trimmed text ('' when absent or not text). */
export const fieldOf = (form: Form, name: string): string => {
  const value = form[name];
  return typeof value === 'string' ? value.trim() : '';
};

/**
 * The POST /v1/agents body of the create form: empty fields left out (the API's defaults), numbers
 * as numbers; a field that is not a number goes as typed, so the API's validation says what is wrong.
 */
export const createAgentBody = (form: Form): Record<string, unknown> => {
  const numbers = (names: string[]) => {
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const text = fieldOf(form, name);
      if (text === '') continue;
      const n = Number(text);
      out[name] = Number.isFinite(n) ? n : text;
    }
    return out;
  };
  const sandbox = numbers(['memoryMb', 'cpus', 'diskMb', 'pids']);
  const codeMode = numbers(['cpuMs', 'wallMs']);
  const preset = fieldOf(form, 'preset');
  const mode = fieldOf(form, 'mode');
  return {
    ...(preset === '' ? {} : { preset }),
    ...(mode === '' ? {} : { mode }),
    ...(Object.keys(sandbox).length === 0 ? {} : { sandbox }),
    ...(Object.keys(codeMode).length === 0 ? {} : { codeMode }),
  };
};

/** Delete, behind a checkbox that must be ticked (no script needed to confirm). */
export const deleteAgentForm = (session: ConsoleSession, id: string): Node =>
  h(
    'form',
    {
      method: 'post',
      action: `/console/agents/${encodeURIComponent(id)}/delete`,
      class: 'action',
      id: 'delete-agent',
    },
    csrfField(session),
    h(
      'label',
      null,
      'its sandbox, workspace and children go too',
      h(
        'span',
        null,
        h('input', { type: 'checkbox', name: 'confirm', value: 'yes', required: true }),
        ' yes',
      ),
    ),
    h('button', { type: 'submit', class: 'danger' }, 'Delete agent'),
  );

/** The run page's two forms: a command (exec) and a tool call, with the agent's tool names. */
export const runForms = (
  session: ConsoleSession,
  id: string,
  tools: string[],
  last: { command?: string; tool?: string; args?: string } = {},
): Node[] => {
  const base = `/console/agents/${encodeURIComponent(id)}/run`;
  return [
    h('h2', null, 'Run a command'),
    h(
      'form',
      { method: 'post', action: `${base}/exec`, class: 'action', id: 'exec' },
      csrfField(session),
      h(
        'label',
        null,
        'command (bash -c, in the workspace)',
        h('input', { type: 'text', name: 'command', required: true, size: 60, value: last.command ?? '' }),
      ),
      h('label', null, 'cwd', h('input', { type: 'text', name: 'cwd', size: 16, placeholder: '.' })),
      h(
        'label',
        null,
        'timeout (ms)',
        h('input', { type: 'number', name: 'timeoutMs', min: 1, size: 8, placeholder: 'default' }),
      ),
      h('button', { type: 'submit' }, 'Run'),
    ),
    h('h2', null, 'Call a tool'),
    h(
      'form',
      { method: 'post', action: `${base}/call`, class: 'action', id: 'call' },
      csrfField(session),
      h(
        'label',
        null,
        'tool',
        h(
          'select',
          { name: 'name', required: true },
          ...tools.map((t) => h('option', { value: t, ...(t === last.tool ? { selected: true } : {}) }, t)),
        ),
      ),
      h(
        'label',
        null,
        'arguments (JSON)',
        h('textarea', { name: 'arguments', rows: 4, cols: 60 }, last.args ?? '{}'),
      ),
      h('button', { type: 'submit' }, 'Call'),
    ),
  ];
};

/** POST /v1/agents/:id/exec's answer. */
export interface ExecView {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
}

export const execResult = (r: ExecView): Node =>
  h(
    'section',
    { id: 'result', 'data-exit': String(r.exitCode) },
    h('h2', null, 'Result'),
    table(
      ['exit code', 'took'],
      [h('tr', null, h('td', null, String(r.exitCode)), h('td', null, durationText(r.durationMs)))],
    ),
    h('h3', null, `stdout${r.stdoutTruncated ? ' (truncated)' : ''}`),
    h('pre', { class: 'stdout' }, r.stdout),
    r.stderr === '' ? null : h('h3', null, `stderr${r.stderrTruncated ? ' (truncated)' : ''}`),
    r.stderr === '' ? null : h('pre', { class: 'stderr' }, r.stderr),
  );

/** One result of POST /v1/agents/:id/calls. */
export interface CallResultView {
  ok: boolean;
  value?: unknown;
  content?: unknown;
  error?: { code?: string; message?: string };
  durationMs?: number;
}

export const callResult = (r: CallResultView): Node =>
  h(
    'section',
    { id: 'result', 'data-ok': String(r.ok) },
    h('h2', null, 'Result'),
    table(
      ['outcome', 'took'],
      [
        h(
          'tr',
          null,
          h('td', null, r.ok ? 'ok' : `failed: ${r.error?.code ?? ''}`),
          h('td', null, r.durationMs === undefined ? '' : durationText(r.durationMs)),
        ),
      ],
    ),
    h(
      'pre',
      { class: 'value' },
      r.ok ? JSON.stringify(r.value ?? r.content ?? null, null, 2) : (r.error?.message ?? ''),
    ),
  );
