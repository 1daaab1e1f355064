// The tenant-wide timeline: every agent's log merged by time. The API has no tenant-wide stream,
// so the browser polls `/console/timeline/events` with a cursor (each agent's last seq seen), and
// each poll reads the next page of each agent's log (GET /v1/agents/:id/events?after=) — short
// requests that hold no tenant slot between polls, unlike one open stream per agent would.
// Bounds: the MAX_AGENTS newest agents, PAGE events per agent per poll, PARALLEL pages read at
// once (so a poll never takes more than that many of the tenant's request slots).
import { type Context, Hono } from 'hono';
import { type ApiFetch, apiJson } from './api.ts';
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

export const timelineRoutes = (fetch: ApiFetch, sessions: Sessions): Hono<ConsoleEnv> => {
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
    const pages = await readLimited(agents, PARALLEL, async (a) => {
      const after = cursor[a.id] ?? 0;
      const { events, next } = await apiJson<{ events: EventView[]; next: number }>(
        fetch,
        c,
        key,
        `/v1/agents/${encodeURIComponent(a.id)}/events?after=${after}&limit=${PAGE}`,
      );
      return { id: a.id, events: events.map((e) => ({ agentId: a.id, ...e })), next };
    });
    const next = Object.fromEntries(pages.map((p) => [p.id, p.next]));
    const events = pages.flatMap((p) => p.events).sort((a, b) => a.at - b.at);
    return c.json({
      events,
      cursor: Buffer.from(JSON.stringify(next)).toString('base64url'),
      more: pages.some((p) => p.events.length === PAGE),
    });
  });
  return app;
};
