// The tenant-wide timeline: every agent's log merged by time. The API has no tenant-wide stream,
// so the browser polls `/console/timeline/events` with a cursor (each agent's last seq seen), and
// each poll reads the next page of each agent's log (GET /v1/agents/:id/events?after=) — short
// requests that hold no tenant slot between polls, unlike one open stream per agent would.
// Bounds: the MAX_AGENTS newest agents, PAGE events per agent per poll, PARALLEL pages read at
// once (so a poll never takes more than that many of the tenant's request slots), and no page
// started once a poll has read `pollBytes` (a page is up to the API's 1 MiB: 50 of them would be
// 50 MiB per poll); agents are read in a random order, so a few busy logs cannot starve the rest.
import { type Context, Hono } from 'hono';
import { type ApiFetch, apiJson, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, requireSession } from './guard.ts';
import type { Sessions } from './sessions.ts';
import { timeline } from './views/agent.ts';
import type { AgentView } from './views/agents.ts';
import { h, page } from './views/layout.ts';

export const MAX_AGENTS = 50;
const PAGE = 200;
/**
 * Pages a poll reads at once. Each read takes one of the tenant's request slots (16 by default):
 * reading every agent's page at once made a tenant with more agents than slots get 429 on every
 * poll, and starved its other clients of slots while a poll ran.
 */
const PARALLEL = 4;

/** `read` over `items`, at most `limit` at a time; results in the items' order. */
const readLimited = async <T, R>(items: T[], limit: number, read: (item: T) => Promise<R>): Promise<R[]> => {
  const results: R[] = [];
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const i = next++;
      results[i] = await read(items[i] as T);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
};

interface EventView {
  seq: number;
  at: number;
}

/** The cursor the browser sends back: each agent's last seq seen. Anything malformed is a fresh start. */
const cursorOf = (raw: string | undefined): Record<string, number> => {
  try {
    const parsed = JSON.parse(Buffer.from(raw ?? '', 'base64url').toString('utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object') return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, number] => Number.isSafeInteger(e[1]) && e[1] >= 0),
    );
  } catch {
    return {};
  }
};

/** Bytes of pages a poll reads before it starts no more (default). */
export const POLL_BYTES = 2 * 1024 * 1024;

/** A copy of `items` in random order. */
const shuffled = <T>(items: T[]): T[] => {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
};

export const timelineRoutes = (
  fetch: ApiFetch,
  sessions: Sessions,
  pollBytes = POLL_BYTES,
): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();
  app.use('/console/timeline', requireSession(sessions, 'tenant'));
  app.use('/console/timeline/*', requireSession(sessions, 'tenant'));
  const newest = async (c: Context, key: string) => {
    const { agents } = await apiJson<{ agents: AgentView[] }>(fetch, c, key, '/v1/agents');
    return agents.sort((a, b) => b.createdAt - a.createdAt).slice(0, MAX_AGENTS);
  };

  app.get('/console/timeline', async (c) => {
    const session = c.get('session');
    const agents = await newest(c, session.key);
    return c.html(
      await page(
        { title: 'Tenant timeline', session, scripts: ['timeline.js'] },
        h(
          'p',
          { class: 'muted' },
          `Every event of the tenant's ${agents.length} newest agents (at most ${MAX_AGENTS}), merged by time; export one agent's log from its page.`,
        ),
        timeline({ poll: '/console/timeline/events' }),
      ),
    );
  });

  app.get('/console/timeline/events', async (c) => {
    const key = c.get('session').key;
    const cursor = cursorOf(c.req.query('cursor'));
    const agents = await newest(c, key);
    let read = 0;
    const pages = await readLimited(shuffled(agents), PARALLEL, async (a) => {
      const after = cursor[a.id] ?? 0;
      // Past the budget the agent keeps its place in the cursor and the next poll comes at once.
      if (read >= pollBytes) return { id: a.id, events: [], next: after, left: true };
      const res = await apiRequest(
        fetch,
        c,
        key,
        `/v1/agents/${encodeURIComponent(a.id)}/events?after=${after}&limit=${PAGE}`,
      );
      if (!res.ok) throw await failureOf(res);
      const text = await res.text();
      read += text.length;
      const { events, next } = JSON.parse(text) as { events: EventView[]; next: number };
      const left = events.length === PAGE;
      return { id: a.id, events: events.map((e) => ({ agentId: a.id, ...e })), next, left };
    });
    const next = Object.fromEntries(pages.map((p) => [p.id, p.next]));
    const events = pages.flatMap((p) => p.events).sort((a, b) => a.at - b.at);
    return c.json({
      events,
      cursor: Buffer.from(JSON.stringify(next)).toString('base64url'),
      more: pages.some((p) => p.left),
    });
  });
  return app;
};
