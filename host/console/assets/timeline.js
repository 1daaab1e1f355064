// The live audit timeline: on an agent page it follows the console's SSE proxy of the agent's
// event log (EventSource resumes by Last-Event-ID on its own); on the tenant timeline it polls the
// merged JSON with its cursor. It filters rows in place and turns request.created events into
// answer forms. Untrusted data only ever becomes text: elements are
// made with createElement and filled with append(string) / textContent, never parsed as markup.
const section = document.getElementById('timeline');
const list = document.getElementById('events');
const filters = document.getElementById('filters');
const state = document.getElementById('stream-state');
const exportLink = document.getElementById('export');
const requests = document.getElementById('requests');
const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const clip = (text, max = 400) => (text.length > max ? `${text.slice(0, max)}…` : text);
const json = (value) => clip(JSON.stringify(value) ?? 'undefined');

/** Milliseconds with the precision people read (the twin of views/format.ts durationText). */
function ms(value) {
  const n = Number(value);
  if (!Number.isFinite(n)) return '';
  if (n < 1) return `${n.toFixed(2)} ms`;
  if (n < 100) return `${n.toFixed(1)} ms`;
  if (n < 10_000) return `${Math.round(n)} ms`;
  return `${(n / 1000).toFixed(1)} s`;
}

/** One line about an event's data, by type. */
function summary(e) {
  const d = e.data ?? {};
  if (e.type === 'tool.call') return `${d.name}(${json(d.arguments)})`;
  if (e.type === 'tool.result')
    return `${d.name} ${d.ok ? 'ok' : `failed ${d.error?.code ?? ''}`} ${ms(d.durationMs)} ${d.ok ? json(d.value ?? d.content) : clip(String(d.error?.message ?? ''))}`;
  if (e.type.startsWith('request.'))
    return `${d.kind ?? ''} ${d.requestId ?? ''} ${json(d.payload ?? d.answer ?? d)}`;
  return json(d);
}

function matches(row) {
  const f = new FormData(filters);
  const family = f.get('family');
  const surface = f.get('surface');
  const call = String(f.get('call') ?? '').trim();
  const text = String(f.get('text') ?? '')
    .trim()
    .toLowerCase();
  return (
    (!family || row.dataset.family === family) &&
    (!surface || row.dataset.surface === surface) &&
    (!call || row.dataset.call === call || row.dataset.parent === call) &&
    (!text || row.textContent.toLowerCase().includes(text))
  );
}

function applyFilters() {
  for (const row of list.children) row.hidden = !matches(row);
  const f = new FormData(filters);
  const query = new URLSearchParams();
  for (const name of ['family', 'surface', 'call']) if (f.get(name)) query.set(name, String(f.get(name)));
  const base = section.dataset.export;
  if (!exportLink || !base) return;
  exportLink.setAttribute('href', query.size > 0 ? `${base}?${query}` : base);
}

/** Rows shown, by agent and seq: a replayed or re-polled event is never added twice. */
const shown = new Set();

function addRow(e) {
  const key = `${e.agentId ?? ''}:${Number(e.seq)}`;
  if (shown.has(key)) return false;
  shown.add(key);
  const inner = e.parentCallId !== undefined;
  const row = el(
    'li',
    { class: `event ${inner ? 'inner' : 'root'} ${e.type.replace(/[^a-z_.]/gi, '').replaceAll('.', '-')}` },
    e.agentId === undefined
      ? null
      : el('a', { class: 'agent', href: `/console/agents/${encodeURIComponent(e.agentId)}` }, e.agentId),
    el('span', { class: 'seq' }, String(e.seq)),
    el('time', {}, new Date(e.at).toISOString().slice(11, 23)),
    el('span', { class: 'type' }, e.type),
    el('span', { class: 'call' }, inner ? `${e.callId ?? ''} ⊂ ${e.parentCallId}` : (e.callId ?? '')),
    el('span', { class: 'summary' }, summary(e)),
  );
  row.dataset.seq = String(e.seq);
  row.dataset.type = e.type;
  row.dataset.family = e.type.split('.')[0];
  row.dataset.surface = e.surface;
  if (e.callId !== undefined) row.dataset.call = e.callId;
  if (inner) row.dataset.parent = e.parentCallId;
  if (e.agentId !== undefined) row.dataset.agent = e.agentId;
  row.hidden = !matches(row);
  list.append(row);
  return true;
}

// Answer forms for requests that arrive while the page is open (the server renders the others,
// in views/requests.ts: the two must offer the same fields).
const QUESTION_KINDS = new Set(['approval', 'plan_review']);
const TEXT_RESULT = new Set(['subagent', 'reminder', 'agent_wakeup']);

/** What a request asks, by kind, as text (the twin of views/requests.ts summary). */
function asks(kind, p) {
  const s = (v) => String(v);
  switch (kind) {
    case 'remote_tool':
      return clip(`${s(p?.toolName)}(${JSON.stringify(p?.arguments ?? null)})`, 2000);
    case 'subagent':
      return clip(`${p?.description ? `${s(p.description)}: ` : ''}${s(p?.prompt)}`, 2000);
    case 'plugin_client_query':
      return clip(`${s(p?.provider)}.${s(p?.method)}(${JSON.stringify(p?.input ?? null)})`, 2000);
    case 'reminder':
      return clip(`reminder: ${s(p?.prompt)}`, 2000);
    case 'agent_wakeup':
      return clip(`from ${s(p?.fromName ?? p?.from)} (${s(p?.reason)}): ${s(p?.message)}`, 2000);
    default:
      return clip(JSON.stringify(p) ?? '', 2000);
  }
}
function requestForm(agentId, requestId, kind, payload) {
  const form = el('form', {
    method: 'post',
    action: `/console/agents/${encodeURIComponent(agentId)}/requests/${encodeURIComponent(requestId)}`,
    class: 'request',
    'data-request': requestId,
  });
  form.append(
    el('input', { type: 'hidden', name: 'csrf', value: csrf }),
    el('input', { type: 'hidden', name: 'kind', value: kind }),
    el('p', {}, el('strong', {}, kind), ' ', el('code', {}, requestId)),
  );
  if (QUESTION_KINDS.has(kind)) {
    form.append(
      el(
        'pre',
        {},
        kind === 'approval' ? `${payload?.toolName}: ${payload?.reason}` : String(payload?.plan ?? ''),
      ),
      ...(kind === 'approval' ? [el('pre', {}, JSON.stringify(payload?.arguments ?? null, null, 2))] : []),
      el('input', { type: 'text', name: 'reason', placeholder: 'reason (optional)' }),
      el('button', { type: 'submit', name: 'decision', value: 'deny' }, 'Deny'),
      el('button', { type: 'submit', name: 'decision', value: 'allow' }, 'Allow'),
    );
  } else if (kind === 'user_question' && Array.isArray(payload?.questions)) {
    for (const q of payload.questions) {
      const field =
        Array.isArray(q.options) && q.options.length > 0
          ? el(
              'select',
              q.multi_select ? { name: `q:${q.id}`, multiple: '' } : { name: `q:${q.id}` },
              ...q.options.map((o) => el('option', { value: o.label }, o.label)),
            )
          : el('input', { type: 'text', name: `q:${q.id}` });
      form.append(
        el(
          'label',
          { class: 'question' },
          el('span', {}, q.header ? `${q.header}: ${q.question}` : q.question),
          field,
        ),
      );
    }
    form.append(el('button', { type: 'submit' }, 'Answer'));
  } else {
    form.append(
      el('pre', {}, asks(kind, payload)),
      el('textarea', {
        name: 'result',
        rows: 3,
        cols: 60,
        placeholder: TEXT_RESULT.has(kind) ? 'the final text' : 'the result: JSON, or text',
      }),
      el('button', { type: 'submit', name: 'outcome', value: 'result' }, 'Send result'),
      el('button', { type: 'submit', name: 'outcome', value: 'error', class: 'danger' }, 'Send error'),
    );
  }
  return form;
}

function trackRequest(e) {
  if (!requests) return;
  const id = e.data?.requestId;
  if (typeof id !== 'string') return;
  const shown = [...requests.querySelectorAll('form.request')].find((f) => f.dataset.request === id);
  if (e.type === 'request.created' && !shown)
    requests.append(requestForm(requests.dataset.agent, id, String(e.data.kind), e.data.payload));
  else if (e.type !== 'request.created' && shown) shown.remove();
  document.getElementById('no-requests').hidden = requests.querySelector('form.request') !== null;
}

filters.addEventListener('input', applyFilters);
filters.addEventListener('submit', (event) => event.preventDefault());

// The terminals this agent opened (terminal_open results), each a link to attach to it.
const terminals = document.getElementById('terminals');
function trackTerminal(e) {
  const tid = e.data?.value?.sessionId;
  if (!terminals || e.type !== 'tool.result' || e.data?.name !== 'terminal_open' || !e.data.ok) return;
  if (typeof tid !== 'string') return;
  const href = `/console/agents/${encodeURIComponent(terminals.dataset.agent)}/terminal?tid=${encodeURIComponent(tid)}`;
  terminals.append(el('li', {}, el('a', { href, class: 'terminal' }, `terminal ${tid}`)));
}

function follow(url) {
  const source = new EventSource(url);
  source.addEventListener('open', () => {
    state.textContent = 'live';
  });
  source.addEventListener('error', () => {
    state.textContent = source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting…';
  });
  source.addEventListener('event', (message) => {
    const e = JSON.parse(message.data);
    if (!addRow(e)) return;
    if (e.type.startsWith('request.')) trackRequest(e);
    trackTerminal(e);
  });
  for (const end of ['deleted', 'shutdown']) {
    source.addEventListener(end, (message) => {
      state.textContent = JSON.parse(message.data).message;
      source.close();
    });
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function poll(url) {
  let cursor = '';
  for (;;) {
    try {
      const res = await fetch(`${url}?cursor=${encodeURIComponent(cursor)}`, {
        headers: { accept: 'application/json' },
      });
      if (res.redirected || !res.ok) {
        state.textContent = `stopped (${res.redirected ? 'signed out' : res.status})`;
        return;
      }
      const body = await res.json();
      list.classList.add('with-agent');
      for (const e of body.events) addRow(e);
      cursor = body.cursor;
      state.textContent = 'live';
      if (!body.more) await sleep(2000);
    } catch {
      state.textContent = 'reconnecting…';
      await sleep(5000);
    }
  }
}

if (section.dataset.stream) follow(section.dataset.stream);
else if (section.dataset.poll) void poll(section.dataset.poll);
