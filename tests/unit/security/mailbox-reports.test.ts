// A teammate cannot make another's report disappear: bob fills the lead's mailbox with messages
// (its most, then MAILBOX_FULL), and alice's report still arrives in it, as do the service's notice
// that a run finished. A report has its sender's own room: a child that leaves too many unread
// reports is told (MAILBOX_FULL) instead of the report vanishing. Through the tool calls of the
// composed agent service, as each agent's client makes them.
import { afterAll, expect, it } from 'vitest';
import type { Agent } from '../../../host/agents/types.ts';
import { DEFAULT_CHILD_LIMITS } from '../../../host/teams/limits.ts';
import { REPORTS_PER_SENDER } from '../../../host/teams/mailboxes.ts';
import type { ToolResult } from '../../../host/tools/types.ts';
import { composedService } from '../../helpers/composed.ts';

const service = await composedService();
afterAll(() => service.close());

let n = 0;
const calls = async (agent: Agent, list: [string, unknown][]): Promise<ToolResult[]> =>
  (await service.agents.call(
    agent,
    list.map(([name, args]) => ({ id: `c${++n}`, name, arguments: args })),
    { signal: new AbortController().signal },
  )) as ToolResult[];
const value = async (agent: Agent, name: string, args: unknown) => {
  const [result] = await calls(agent, [[name, args]]);
  expect(result?.ok, JSON.stringify(result?.error)).toBe(true);
  return result?.value as { [key: string]: unknown };
};

it("keeps a teammate's report when another fills the lead's mailbox with messages", async () => {
  const { agents, tenant } = service;
  const lead = await agents.create(tenant, { teams: true });
  const spawn = async (name: string) =>
    await agents.get(
      tenant,
      (await value(lead, 'spawn_teammate', { name, description: name, prompt: 'work' })).agent_id as string,
    );
  const alice = await spawn('alice');
  const bob = await spawn('bob');

  // bob fills the lead's mailbox: the next message is refused.
  const size = DEFAULT_CHILD_LIMITS.mailboxSize;
  const flood = await calls(
    bob,
    Array.from({ length: size + 1 }, (_, i): [string, unknown] => [
      'send_message',
      { target: 'lead', message: `noise ${i}` },
    ]),
  );
  expect(flood.slice(0, size).every((r) => r.ok)).toBe(true);
  expect(flood[size]?.error?.code).toBe('MAILBOX_FULL');

  // alice's report (her run ends with it) and a later one (idle) both reach the lead.
  await value(alice, 'report', { output: 'Release notes written.' });
  await value(alice, 'report', { output: 'Also fixed the changelog.' });
  const mail = (await value(lead, 'wait_agent', { timeout_ms: 0 })).messages as {
    from_name?: string;
    kind: string;
    message: string;
  }[];
  expect(mail.filter((m) => m.kind === 'message')).toHaveLength(size);
  expect(mail.filter((m) => m.kind === 'report').map((m) => [m.from_name, m.message])).toEqual([
    ['alice', 'Release notes written.'],
    ['alice', 'Also fixed the changelog.'],
  ]);

  // A child that leaves its room full of unread reports is told so, and nothing else changes.
  for (let i = 0; i < REPORTS_PER_SENDER; i++) await value(alice, 'report', { output: `report ${i}` });
  const [refused] = await calls(alice, [['report', { output: 'one too many' }]]);
  expect(refused?.error?.code).toBe('MAILBOX_FULL');
  const unread = (await value(lead, 'wait_agent', { timeout_ms: 0 })).messages as { message: string }[];
  expect(unread.map((m) => m.message)).toEqual(
    Array.from({ length: REPORTS_PER_SENDER }, (_, i) => `report ${i}`),
  );
  // Once read, there is room again.
  await value(alice, 'report', { output: 'read now' });
});
