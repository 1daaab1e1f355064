// An agent's remote tools come back after a restart from the agents table: the restarted service
// loads, describes and runs them without reading the session log (its log double fails if paged).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import type { AgentService } from '../../../host/agents/service.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { type ClosableEventLog, openStore, type Store } from '../../../host/store/index.ts';

const dirs: string[] = [];
const open: { agents: AgentService; store: Store }[] = [];
afterEach(async () => {
  for (const { agents, store } of open.splice(0)) {
    await agents.close(0);
    store.close();
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The store's log, except that reading a session's events fails the test. */
const logThatMustNotBePaged = (events: ClosableEventLog): ClosableEventLog => ({
  ...events,
  list(sessionId) {
    throw new Error(`the agent service paged the log of ${sessionId}`);
  },
});

const boot = (dataDir: string, events?: (log: ClosableEventLog) => ClosableEventLog) => {
  const store = openStore({ dataDir });
  const { agents } = assembleAgents({
    store: { ...store, events: events ? events(store.events) : store.events },
    sandboxes: createMemoryProvider(),
  });
  open.push({ agents, store });
  return { store, agents };
};

const tool = (name: string, description: string) => ({ name, description, parameters: { type: 'object' } });

it('an agent keeps its remote tools across a restart, loaded without reading its log', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-agents-restart-'));
  dirs.push(dataDir);
  const first = boot(dataDir);
  const tenant = (await first.store.tenants.createTenant('t')).id;
  const created = await first.agents.create(tenant, {
    preset: 'minimal',
    remoteTools: [tool('lookup', 'first version'), tool('notify', 'tells the user')],
  });
  expect(
    await first.agents.registerRemoteTools(created, [
      tool('lookup', 'second version'),
      tool('pick', 'picks'),
    ]),
  ).toEqual(['notify', 'lookup', 'pick']);
  await first.agents.close(0);
  first.store.close();
  open.length = 0;

  const second = boot(dataDir, logThatMustNotBePaged);
  const agent = await second.agents.get(tenant, created.id);
  const surface = await second.agents.tools(agent);
  expect(surface.tools.map((t) => [t.name, t.description])).toEqual([
    ['bash', expect.any(String)],
    ['str_replace_editor', expect.any(String)],
    ['notify', 'tells the user'],
    ['lookup', 'second version'],
    ['pick', 'picks'],
  ]);

  const call = second.agents.call(agent, [{ id: 'c1', name: 'lookup', arguments: { q: 'ada' } }], {
    signal: new AbortController().signal,
  });
  const deadline = Date.now() + 5_000;
  let pending = await second.store.requests.list(agent.sessionId, 'pending');
  while (pending.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    pending = await second.store.requests.list(agent.sessionId, 'pending');
  }
  expect(pending[0]?.payload).toEqual({ toolName: 'lookup', arguments: { q: 'ada' } });
  await second.store.requests.answer(pending[0]!.id, { result: 'found' });
  expect(await call).toEqual([expect.objectContaining({ ok: true, value: 'found' })]);
});
