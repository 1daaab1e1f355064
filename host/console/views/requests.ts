// Pending host requests as forms: approvals and plan reviews as allow / deny, questions as their
// options or free text, and the kinds the client does work for (remote_tool, subagent,
// plugin_client_query, reminder, agent_wakeup) as a result or an error. The browser script builds
// the same forms for requests that arrive while the page is open (assets/timeline.js).
import type { ConsoleSession } from '../sessions.ts';
import { csrfField, h, type Node } from './layout.ts';

export interface RequestView {
  id: string;
  kind: string;
  callId?: string;
  payload: unknown;
  createdAt: number;
  expiresAt: number;
}

interface QuestionView {
  id: string;
  question: string;
  header?: string;
  options?: { label: string; description?: string }[];
  multi_select?: boolean;
}

const asRecord = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};

const questionField = (q: QuestionView): Node =>
  h(
    'label',
    { class: 'question' },
    h('span', null, q.header ? `${q.header}: ${q.question}` : q.question),
    q.options === undefined || q.options.length === 0
      ? h('input', { type: 'text', name: `q:${q.id}` })
      : h(
          'select',
          { name: `q:${q.id}`, ...(q.multi_select ? { multiple: true } : {}) },
          ...q.options.map((o) => h('option', { value: o.label }, o.label)),
        ),
  );

const answerFields = (r: RequestView): Node[] => {
  const payload = asRecord(r.payload);
  if (r.kind === 'approval' || r.kind === 'plan_review')
    return [
      h('input', { type: 'text', name: 'reason', placeholder: 'reason (optional)' }),
      // Deny first: the default button, which Enter in the reason field presses, never allows.
      h('button', { type: 'submit', name: 'decision', value: 'deny' }, 'Deny'),
      h('button', { type: 'submit', name: 'decision', value: 'allow' }, 'Allow'),
    ];
  if (r.kind === 'user_question' && Array.isArray(payload.questions))
    return [
      ...(payload.questions as QuestionView[]).map(questionField),
      h('button', { type: 'submit' }, 'Answer'),
    ];
  return [
    h('textarea', {
      name: 'result',
      rows: 3,
      cols: 60,
      placeholder: TEXT_RESULT.has(r.kind) ? 'the final text' : 'the result: JSON, or text',
    }),
    // Result first: the form's default button sends what was typed as the result.
    h('button', { type: 'submit', name: 'outcome', value: 'result' }, 'Send result'),
    h('button', { type: 'submit', name: 'outcome', value: 'error', class: 'danger' }, 'Send error'),
  ];
};

/** Kinds whose result is the text typed, never parsed as JSON (a subagent's is its final text). */
const TEXT_RESULT = new Set(['subagent', 'reminder', 'agent_wakeup']);

const clip = (text: string): string => (text.length > 2000 ? `${text.slice(0, 2000)}…` : text);

/** What the request asks, by kind, as text. */
export const summary = (r: RequestView): string => {
  const p = asRecord(r.payload);
  switch (r.kind) {
    case 'approval':
      return `${String(p.toolName)}: ${String(p.reason)}`;
    case 'plan_review':
      return String(p.plan);
    case 'remote_tool':
      return clip(`${String(p.toolName)}(${JSON.stringify(p.arguments ?? null)})`);
    case 'subagent':
      return clip(`${p.description ? `${String(p.description)}: ` : ''}${String(p.prompt)}`);
    case 'plugin_client_query':
      return clip(`${String(p.provider)}.${String(p.method)}(${JSON.stringify(p.input ?? null)})`);
    case 'reminder':
      return clip(`reminder: ${String(p.prompt)}`);
    case 'agent_wakeup':
      return clip(`from ${String(p.fromName ?? p.from)} (${String(p.reason)}): ${String(p.message)}`);
    default:
      return clip(JSON.stringify(r.payload));
  }
};

export const requestForm = (agentId: string, r: RequestView, session: ConsoleSession): Node =>
  h(
    'form',
    {
      method: 'post',
      action: `/console/agents/${encodeURIComponent(agentId)}/requests/${encodeURIComponent(r.id)}`,
      class: 'request',
      'data-request': r.id,
    },
    csrfField(session),
    h('input', { type: 'hidden', name: 'kind', value: r.kind }),
    h('p', null, h('strong', null, r.kind), ' ', h('code', null, r.id)),
    h('pre', null, summary(r)),
    r.kind === 'approval'
      ? h('pre', null, JSON.stringify(asRecord(r.payload).arguments ?? null, null, 2))
      : null,
    ...answerFields(r),
  );

/** The API body that answers a request of `kind` from the form's fields (null: not answerable so). */
export const answerOf = (kind: string, form: Record<string, string | File | (string | File)[]>): unknown => {
  if (kind === 'approval' || kind === 'plan_review') {
    const reason =
      typeof form.reason === 'string' && form.reason.trim() !== '' ? form.reason.trim() : undefined;
    return { allow: form.decision === 'allow', ...(reason === undefined ? {} : { reason }) };
  }
  if (kind === 'user_question') {
    const answers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(form)) {
      if (!name.startsWith('q:')) continue;
      const values = (Array.isArray(value) ? value : [value]).filter(
        (v): v is string => typeof v === 'string',
      );
      answers[name.slice(2)] = values.length === 1 ? (values[0] as string) : values;
    }
    return { answers };
  }
  if (typeof form.answer === 'string') {
    // A JSON answer as a whole (what a form of an earlier page sends).
    try {
      return JSON.parse(form.answer);
    } catch {
      return null;
    }
  }
  const text = typeof form.result === 'string' ? form.result : '';
  if (form.outcome === 'error') return { error: text.trim() || 'refused from the console' };
  if (TEXT_RESULT.has(kind)) return { result: text };
  try {
    return { result: JSON.parse(text) };
  } catch {
    return { result: text };
  }
};
