// Live state and usage: every few seconds, the agents list (#agents) and an agent's usage table
// (#usage) read their `data-refresh` JSON and put its text into their cells in place. The server
// formats every value (views/format.ts); this only ever sets textContent. It stops when the
// session is gone (a redirect to the sign-in page) and slows down while the tab is hidden.
const EVERY_MS = 5000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function read(url) {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  if (res.redirected || res.status === 401) return 'signed out';
  if (!res.ok) return undefined;
  return res.json();
}

/** The list: each row's state and last call, by agent id; a row whose agent is gone is marked so. */
function applyAgents(section, body) {
  const byId = new Map(body.agents.map((a) => [a.id, a]));
  for (const row of section.querySelectorAll('tr[data-agent]')) {
    const agent = byId.get(row.dataset.agent);
    const state = row.querySelector('td[data-state]');
    const last = row.querySelector('td[data-last-call]');
    if (state === null || last === null) continue;
    state.dataset.state = agent === undefined ? 'deleted' : agent.sandbox;
    state.textContent = agent === undefined ? 'deleted' : agent.state;
    if (agent !== undefined) last.textContent = agent.lastCall;
  }
  const fresh = body.agents.filter((a) => !section.querySelector(`tr[data-agent="${CSS.escape(a.id)}"]`));
  const note = document.getElementById('new-agents');
  if (note !== null) {
    note.hidden = fresh.length === 0;
    note.textContent = `${fresh.length} new agent${fresh.length === 1 ? '' : 's'}: reload to see them.`;
  }
}

/** One agent: each usage cell by name. */
function applyUsage(section, body) {
  for (const cell of section.querySelectorAll('td[data-usage]')) {
    const text = body.cells[cell.dataset.usage];
    if (typeof text === 'string') cell.textContent = text;
  }
  const state = section.querySelector('td[data-state]');
  if (state !== null) state.dataset.state = body.sandbox;
}

async function follow(section, apply) {
  const status = document.getElementById('refresh-state');
  for (;;) {
    await sleep(document.hidden ? EVERY_MS * 4 : EVERY_MS);
    try {
      const body = await read(section.dataset.refresh);
      if (body === 'signed out') {
        if (status !== null) status.textContent = 'stopped (signed out)';
        return;
      }
      if (body === undefined) continue;
      apply(section, body);
      section.dataset.refreshed = String(Date.now());
      if (status !== null) status.textContent = `refreshed ${new Date().toLocaleTimeString()}`;
    } catch {
      if (status !== null) status.textContent = 'refresh failed; retrying';
    }
  }
}

const agents = document.getElementById('agents');
if (agents?.dataset.refresh) void follow(agents, applyAgents);
const usage = document.getElementById('usage');
if (usage?.dataset.refresh) void follow(usage, applyUsage);
