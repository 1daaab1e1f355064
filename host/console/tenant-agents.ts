// The tenant's agent pages (mounted by ./tenant.ts): the agents, one agent (requests, timeline),
// its event stream and NDJSON export, and answers to its host requests. Every read and write is a
// v1 request with the session's key (api.ts), so another tenant's agent is the API's 404 here too.
// Invariants: the event stream ends with the session, not the tab; the export holds one page of
// events in memory at a time.
import { Hono } from 'hono';
import { agentChoices } from './agent-choices.ts';
import { type ApiFetch, apiJson, apiPost, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, checkCsrf, endBodyOn, sessionEnd } from './guard.ts';
import { createAgentForm } from './views/actions.ts';
import { agentPage, type UsageView } from './views/agent.ts';
import { type AgentView, agentsTable } from './views/agents.ts';
import { h, page } from './views/layout.ts';
import { answerOf, type RequestView } from './views/requests.ts';

interface EventView {
  seq: number;
  type: string;
  surface: string;
  callId?: string;
  parentCallId?: string;
}

/** What the export's query asks to keep (the same filters as the page's). */
const eventFilter = (q: Record<string, string>) => (e: EventView) =>
  (!q.family || e.type.split('.')[0] === q.family) &&
  (!q.surface || e.surface === q.surface) &&
  (!q.call || e.callId === q.call || e.parentCallId === q.call);

/** A download name with nothing that could break out of the header's quoted string. */
export const downloadName = (path: string): string =>
  (path.split('/').pop() || 'file').replace(/[^A-Za-z0-9._-]/g, '_');

/** The session's API key. */
export const key = (c: { get(k: 'session'): { key: string } }) => c.get('session').key;
/** The v1 path of agent `id`. */
export const agentPath = (id: string) => `/v1/agents/${encodeURIComponent(id)}`;

/** GET /console/agents, /console/agents/:id (and its events), POST an answer to a request. */
export const agentPages = (fetch: ApiFetch): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.get('/console/agents', async (c) => {
    const { agents } = await apiJson<{ agents: AgentView[] }>(fetch, c, key(c), '/v1/agents');
    const session = c.get('session');
    return c.html(
      await page(
        { title: 'Agents', session, scripts: ['refresh.js'] },
        createAgentForm(session, await agentChoices(fetch, c, key(c))),
        h('p', { class: 'muted' }, h('span', { id: 'refresh-state' }, 'state refreshes every 5 s')),
        h('p', { id: 'new-agents', class: 'notice', hidden: true }),
        agentsTable(agents),
      ),
    );
  });

  app.get('/console/agents/:id', async (c) => {
    const id = c.req.param('id');
    const agent = await apiJson<AgentView>(fetch, c, key(c), agentPath(id));
    const { requests } = await apiJson<{ requests: RequestView[] }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/requests?state=pending`,
    );
    const usage = await apiJson<UsageView>(fetch, c, key(c), `${agentPath(id)}/usage`);
    const session = c.get('session');
    return c.html(
      await page(
        { title: `Agent ${agent.id}`, session, scripts: ['timeline.js', 'refresh.js'] },
        ...agentPage(agent, requests, session, usage),
      ),
    );
  });

  // The agent's live log as SSE, resumed from Last-Event-ID: the v1 stream itself, ended when the
  // session ends (sign-out, expiry) rather than when the tab is closed.
  app.get('/console/agents/:id/events/stream', async (c) => {
    const lastId = c.req.header('last-event-id');
    const res = await apiRequest(fetch, c, key(c), `${agentPath(c.req.param('id'))}/events`, {
      headers: { accept: 'text/event-stream', ...(lastId === undefined ? {} : { 'last-event-id': lastId }) },
    });
    if (!res.ok) throw await failureOf(res);
    return endBodyOn(res, sessionEnd(c.get('session')));
  });

  // The whole log (or what the filters keep) as NDJSON, read page by page.
  app.get('/console/agents/:id/events.ndjson', async (c) => {
    const id = c.req.param('id');
    const keep = eventFilter(c.req.query());
    const first = await apiJson<{ events: EventView[]; next: number }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/events?limit=1000`,
    );
    const encoder = new TextEncoder();
    let pageOf: { events: EventView[]; next: number } | undefined = first;
    // One page per pull: a slow download holds one page in memory, never the whole log.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (pageOf !== undefined) {
          const current = pageOf;
          pageOf =
            current.events.length === 0
              ? undefined
              : await apiJson(fetch, c, key(c), `${agentPath(id)}/events?limit=1000&after=${current.next}`);
          const lines = current.events.filter(keep).map((e) => `${JSON.stringify(e)}\n`);
          if (lines.length > 0) return controller.enqueue(encoder.encode(lines.join('')));
        }
        controller.close();
      },
    });
    return c.body(body, 200, {
      'Content-Type': 'application/x-ndjson',
      'Content-Disposition': `attachment; filename="${downloadName(id)}-events.ndjson"`,
    });
  });

  app.post('/console/agents/:id/requests/:rid', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const kind = typeof form.kind === 'string' ? form.kind : '';
    await apiPost(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/requests/${encodeURIComponent(c.req.param('rid'))}`,
      answerOf(kind, form),
    );
    return c.redirect(`/console/agents/${encodeURIComponent(id)}`, 303);
  });
  return app;
};
