// The children's operating system: who exists (child agents and teammates are agents of the
// service, linked to the agent that made them), what they said to each other (mailboxes) and
// what the client must run (run and wake-up requests; runs.ts). The model loops run in the client.
// This module owns the operations the child-control and team tools make (tools.ts); the agent
// service (host/agents/service.ts) gives it agent creation, call interruption and deletion.
// It wires the parts, each in its own module under service/: state.ts holds what they share;
// spawn.ts checks every bound and makes a child or teammate (a child never gets more than its
// parent); endings.ts ends a child's run by its report or its deletion; reach.ts decides whom an
// agent reaches (its own descendants, or its team; never another tenant); messaging.ts sends,
// waits, wakes and interrupts; roster.ts lists agents for list_agents; types.ts holds the shapes.
import type { MailItem } from '../store/index.ts';
import { createTeamDirectory } from './directory.ts';
import { childLimitsFor } from './limits.ts';
import { createMailboxes } from './mailboxes.ts';
import { createRuns } from './runs.ts';
import { deleted, report } from './service/endings.ts';
import { interrupt, send, wait } from './service/messaging.ts';
import { descendantsOf } from './service/reach.ts';
import { list } from './service/roster.ts';
import { spawn } from './service/spawn.ts';
import { messageViews, type TeamState } from './service/state.ts';
import type { TeamService, TeamServiceOptions } from './service/types.ts';

export { messageView } from './service/state.ts';
export type {
  AgentSummary,
  MessageView,
  Reach,
  SpawnInput,
  SpawnResult,
  TeamService,
  TeamServiceOptions,
} from './service/types.ts';

export function createTeamService(options: TeamServiceOptions): TeamService {
  const { agents, events, requests, teams, wake } = options.store;
  const limits = (tenantId: string) => childLimitsFor(options.limits, options.limitsOf, tenantId);
  const mailboxes = createMailboxes({ teams, events, limitsOf: limits, ...(wake ? { wake } : {}) });
  const state: TeamState = {
    options,
    agents,
    events,
    requests,
    teams,
    now: options.now ?? Date.now,
    limits,
    mailboxes,
    runs: createRuns({ agents, events, requests, teams, mailboxes }),
    directory: createTeamDirectory(agents),
    spawning: new Map(),
    waking: new Map(),
  };
  const views = (items: readonly MailItem[]) => messageViews(state, items);

  return {
    spawn: (parent, input, call) => spawn(state, parent, input, call),
    report: (child, output) => report(state, child, output),
    send: (from, target, message, how) => send(state, from, target, message, how),
    wait: (agent, timeoutMs, signal) => wait(state, agent, timeoutMs, signal),
    interrupt: (by, target, reach) => interrupt(state, by, target, reach),
    list: (agent, scope) => list(state, agent, scope),
    mailbox: async (agent, afterId, limit) =>
      views(
        await teams.list(agent.id, {
          ...(afterId === undefined ? {} : { afterId }),
          ...(limit === undefined ? {} : { limit }),
        }),
      ),
    take: async (agent) => views(await mailboxes.take(agent.id)),
    descendants: async (agent) => (await descendantsOf(state, agent.tenantId, agent.id)).reverse(),
    deleted: (agent) => deleted(state, agent),
    directory: state.directory,
    limits,
    resume: state.runs.resume,
    close() {
      state.runs.close();
      mailboxes.close();
    },
  };
}
