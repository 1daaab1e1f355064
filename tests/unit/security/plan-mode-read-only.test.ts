// Plan mode refuses what could change something, and nothing else: the session log tools and
// schedule_list only read (the seed says the session tools are read-only), so an agent in plan mode
// runs them; schedule_create, which changes what will happen, still waits for the plan. Through the
// composed agent service, as a client's tool calls arrive.
import { afterAll, expect, it } from 'vitest';
import type { ToolResult } from '../../../host/tools/types.ts';
import { composedService } from '../../helpers/composed.ts';

const service = await composedService();
afterAll(() => service.close());

it('lets an agent in plan mode read its session log and list its schedules', async () => {
  const { agents, tenant } = service;
  const agent = await agents.create(tenant, { preset: 'standard', policy: { planMode: true } });
  const calls: [string, unknown][] = [
    ['session_event_read', { seq: 1 }],
    ['session_event_search', { query: 'anything' }],
    ['session_event_trace', { seq: 1 }],
    ['session_search', { query: 'anything' }],
    ['session_trace', {}],
    ['schedule_list', {}],
    ['schedule_create', { prompt: 'later', after_seconds: 600 }],
  ];
  const results = (await agents.call(
    agent,
    calls.map(([name, args], i) => ({ id: `c${i}`, name, arguments: args })),
    { signal: new AbortController().signal },
  )) as ToolResult[];
  const planMode = results.map((r, i) => [calls[i]?.[0], r.error?.code === 'PLAN_MODE']);
  expect(planMode).toEqual([
    ['session_event_read', false],
    ['session_event_search', false],
    ['session_event_trace', false],
    ['session_search', false],
    ['session_trace', false],
    ['schedule_list', false],
    ['schedule_create', true],
  ]);
  expect(results[5]).toMatchObject({ ok: true, value: [] });
});
