// The service as serve.ts assembles it, without an isolate host: a libsql store (in memory or a
// file, so a test can reopen it as a restarted control plane), the memory sandbox provider, the
// agent service with the session log, schedule and skill tools, and the HTTP app in front.
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { SchedulerOptions } from '../../../host/schedules/scheduler.ts';
import { openStore } from '../../../host/store/index.ts';
import type { ToolResult } from '../../../host/tools/types.ts';

export interface ServiceOptions {
  path?: string;
  now?: () => number;
  schedules?: Pick<SchedulerOptions, 'maxPerAgent' | 'minPeriodMs' | 'now' | 'onError'>;
}

export const startService = (options: ServiceOptions = {}) => {
  const store = openStore({ path: options.path ?? ':memory:', ...(options.now ? { now: options.now } : {}) });
  const { agents, scheduler, skills } = assembleAgents({
    store,
    sandboxes: createMemoryProvider(),
    schedules: { ...(options.now ? { now: options.now } : {}), ...options.schedules },
  });
  const app = createApp({
    startedAt: 0,
    version: 'test',
    store,
    agents,
    ...(scheduler ? { schedules: scheduler } : {}),
    ...(skills ? { skills } : {}),
  });
  let n = 0;
  /** One call through the agent service; its result. */
  const call = async (
    agent: { id: string; tenantId: string },
    name: string,
    args: unknown,
  ): Promise<ToolResult> => {
    const [result] = await agents.call(
      await agents.get(agent.tenantId, agent.id),
      [{ id: `c${++n}`, name, arguments: args }],
      {
        signal: new AbortController().signal,
      },
    );
    return result!;
  };
  const stop = async () => {
    scheduler?.close();
    await agents.close(0);
    store.close();
  };
  return { store, agents, scheduler: scheduler!, skills: skills!, app, call, stop };
};

/** Polls `check` until it returns something other than undefined; fails after `ms`. */
export const waitFor = async <T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  ms = 20_000,
): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};
