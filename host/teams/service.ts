// The children's operating system: who exists (child agents and teammates are agents of the
// service, linked to the agent that made them), what they said to each other (mailboxes) and
// what the client must run (run and wake-up requests; runs.ts). The model loops run in the client.
// This module owns the operations the child-control and team tools make (tools.ts); the agent
// service (host/agents/service.ts) gives it agent creation, call interruption and deletion.
// Invariants: a child never gets more than its parent (same preset, mode, restrictions, policy and
// sandbox options, depth one deeper); every bound is checked before anything is made; an agent
// reaches only its own descendants (subagent tools) or its team (team tools), never another tenant.

import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { RequestStore, SubagentPayload } from '../requests/index.ts';
import { forkConversation } from '../session/messages.ts';
import type {
  AgentLinks,
  AgentRecord,
  AgentStore,
  ChildRun,
  ChildStatus,
  EventLog,
  MailItem,
  MailKind,
  TeamStore,
} from '../store/index.ts';
import { createTeamDirectory, LEAD_NAME, type TeamDirectory, teamIdOf } from './directory.ts';
import { type ChildLimits, childLimitsFor } from './limits.ts';
import { createMailboxes, type Mailboxes } from './mailboxes.ts';
import { createRuns, type Runs } from './runs.ts';

export interface SpawnInput {
  description: string;
  prompt: string;
  /** Return at once; the outcome arrives as an event (teammates always run in the background). */
  background: boolean;
  /** `fork`: the child's log starts with its parent's conversation. */
  context: 'fresh' | 'fork';
  role: 'child' | 'teammate';
  /** A teammate's name. */
  name?: string;
  /** The provider bundle of an alias (subagent_codex …), for the client. */
  provider?: string;
}

/** What a spawn call returns (snake_case: the model reads it). */
export interface SpawnResult {
  agent_id: string;
  name?: string;
  status: ChildStatus;
  output?: string;
}

/** One agent as list_agents shows it. */
export interface AgentSummary {
  agent_id: string;
  name?: string;
  role: 'lead' | 'teammate' | 'child' | 'self';
  parent_id?: string;
  depth: number;
  description?: string;
  status?: ChildStatus;
  output?: string;
  /** Calls of it are running now. */
  busy: boolean;
  /** Messages in its mailbox it has not read. */
  unread: number;
}

/** A mailbox item as the model and the API read it. */
export interface MessageView {
  id: number;
  from: string;
  from_name?: string;
  kind: MailKind;
  message: string;
  at: string;
}

export type Reach = 'children' | 'team';

export interface TeamServiceOptions {
  store: {
    agents: AgentStore;
    events: EventLog;
    requests: RequestStore;
    teams: TeamStore;
  };
  /** Makes the child agent (its record, its tools loaded) as AgentService.create does. */
  createChild(parent: Agent, links: AgentLinks): Promise<Agent>;
  /** Deletes an agent this service made but could not start. */
  removeChild(child: Agent): Promise<void>;
  /** The names of the agent's model-facing tools. */
  toolNames(agent: Agent): Promise<string[]>;
  /** Aborts the agent's calls in flight; returns how many batches were stopped. */
  interrupt(agentId: string, by: string): number;
  /** Whether calls of the agent are running now. */
  busy(agentId: string): boolean;
  /** The service's defaults over DEFAULT_CHILD_LIMITS. */
  limits?: Partial<ChildLimits>;
  /** Each tenant's own maxima. */
  limitsOf?: (tenantId: string) => Partial<ChildLimits> | undefined;
  now?: () => number;
}

export interface TeamService {
  spawn(
    parent: Agent,
    input: SpawnInput,
    call: { callId: string; signal: AbortSignal },
  ): Promise<SpawnResult>;
  /** report(output): sets a child's output for its parent and ends its run. */
  report(child: Agent, output: string): { parent_id: string; status: ChildStatus };
  send(
    from: Agent,
    target: string,
    message: string,
    how: { reach: Reach; kind: 'message' | 'followup'; wake: boolean; callId: string },
  ): { message_id: number; agent_id: string; woke: boolean };
  /** Takes the agent's unread messages, waiting for one up to `timeoutMs` (cut to the tenant's most). */
  wait(
    agent: Agent,
    timeoutMs: number | undefined,
    signal: AbortSignal,
  ): Promise<{ messages: MessageView[]; timed_out: boolean }>;
  interrupt(by: Agent, target: string, reach: Reach): { agent_id: string; interrupted_batches: number };
  list(agent: Agent, scope: 'children' | 'descendants' | 'team'): AgentSummary[];
  /** The agent's mailbox after `afterId` (read or not). */
  mailbox(agent: Agent, afterId?: number, limit?: number): MessageView[];
  /** Takes (delivers) the agent's unread messages. */
  take(agent: Agent): MessageView[];
  /** The agent's live descendants, deepest first (deleted before it). */
  descendants(agent: Agent): AgentRecord[];
  /** The agent was deleted: its run is cancelled (its parent told), its unread mail cancelled. */
  deleted(agent: Agent): void;
  readonly directory: TeamDirectory;
  limits(tenantId: string): ChildLimits;
  /** Watches the runs a previous process left pending; resolves to how many. */
  resume(): number;
  close(): void;
}

const TEAMMATE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

function limitError(limit: string, max: number, message: string): SandboxError {
  return new SandboxError('CHILD_LIMIT_EXCEEDED', message, { data: { limit, max } });
}

export function messageView(item: MailItem, nameOf: (id: string) => string | undefined): MessageView {
  const name = nameOf(item.fromId);
  return {
    id: item.id,
    from: item.fromId,
    ...(name === undefined ? {} : { from_name: name }),
    kind: item.kind,
    message: item.body,
    at: new Date(item.createdAt).toISOString(),
  };
}

export function createTeamService(options: TeamServiceOptions): TeamService {
  const { agents, events, requests, teams } = options.store;
  const now = options.now ?? Date.now;
  const limits = (tenantId: string) => childLimitsFor(options.limits, options.limitsOf, tenantId);
  const mailboxes: Mailboxes = createMailboxes({ teams, events, limitsOf: limits });
  const runs: Runs = createRuns({ agents, events, requests, teams, mailboxes });
  const directory = createTeamDirectory(agents);

  function recordOf(agent: Agent): AgentRecord {
    const record = agents.get(agent.tenantId, agent.id);
    if (record === undefined) throw new SandboxError('NOT_FOUND', `Agent ${agent.id} was deleted.`);
    return record;
  }

  function nameOf(id: string): string | undefined {
    const record = agents.byId(id);
    if (record === undefined) return undefined;
    if (record.links?.name !== undefined) return record.links.name;
    return teamIdOf(record) === record.id ? LEAD_NAME : undefined;
  }

  function checkBytes(tenantId: string, text: string, what: string): void {
    const max = limits(tenantId).messageBytes;
    const bytes = Buffer.byteLength(text);
    if (bytes > max)
      throw new SandboxError(
        'PAYLOAD_TOO_LARGE',
        `The ${what} is ${bytes} bytes; this tenant's most is ${max}. Shorten it, or write it to a file and pass its path.`,
        { data: { bytes, max } },
      );
  }

  /**
   * One spawn per parent at a time from its check until its child's run exists (createChild
   * awaits), so two concurrent spawns cannot both pass the last slot or take the same name.
   */
  const spawning = new Map<string, Promise<unknown>>();

  async function exclusive<T>(parentId: string, work: () => Promise<T>): Promise<T> {
    const before = spawning.get(parentId) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => undefined);
    spawning.set(parentId, tail);
    try {
      return await mine;
    } finally {
      if (spawning.get(parentId) === tail) spawning.delete(parentId);
    }
  }

  function checkSpawn(parent: Agent, input: SpawnInput): AgentLinks {
    const bounds = limits(parent.tenantId);
    const depth = (parent.links?.depth ?? 0) + 1;
    if (depth > bounds.maxDepth)
      throw limitError(
        'depth',
        bounds.maxDepth,
        `A child here would be at depth ${depth}; this tenant allows ${bounds.maxDepth}. Do the work yourself or report back to your parent.`,
      );
    const children = agents.children(parent.tenantId, parent.id);
    if (children.length >= bounds.childrenPerAgent)
      throw limitError(
        'children',
        bounds.childrenPerAgent,
        `This agent has ${children.length} children, its tenant's most; give work to one of them with send_message instead.`,
      );
    const running = children.filter((c) => teams.run(c.id)?.status === 'running').length;
    if (running >= bounds.concurrentChildren)
      throw limitError(
        'concurrent',
        bounds.concurrentChildren,
        `${running} children of this agent are running, its tenant's most at once; wait for one to finish first.`,
      );
    checkBytes(parent.tenantId, input.prompt, 'prompt');
    const links: AgentLinks = { parentId: parent.id, role: input.role, depth };
    if (input.role !== 'teammate') return links;
    if (parent.links?.role === 'teammate')
      throw new SandboxError(
        'DENIED',
        'Only the lead spawns teammates; ask it to with send_message(target: "lead", …).',
      );
    const name = input.name ?? '';
    if (!TEAMMATE_NAME.test(name) || name === LEAD_NAME)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `A teammate name is 1-64 letters, digits, "_" or "-", and not "${LEAD_NAME}"; got ${JSON.stringify(name)}.`,
      );
    if (agents.teammates(parent.tenantId, parent.id).some((t) => t.links?.name === name))
      throw new SandboxError(
        'CONFLICT',
        `Your team already has a teammate named ${name}; pick another name.`,
      );
    return { ...links, teamId: parent.id, name };
  }

  async function spawn(
    parent: Agent,
    input: SpawnInput,
    call: { callId: string; signal: AbortSignal },
  ): Promise<SpawnResult> {
    const { links, child, run } = await exclusive(parent.id, async () => {
      const links = checkSpawn(parent, input);
      const child = await options.createChild(parent, links);
      const run = {
        agentId: child.id,
        tenantId: child.tenantId,
        parentId: parent.id,
        description: input.description,
      };
      // Counted as running from here, before the next spawn of this parent is checked.
      teams.putRun({ ...run, status: 'running' });
      return { links, child, run };
    });
    const base = { agent_id: child.id, ...(links.name === undefined ? {} : { name: links.name }) };
    let requestId: string;
    try {
      if (input.context === 'fork')
        forkConversation(events, parent.sessionId, child.sessionId, limits(parent.tenantId).forkMessages);
      const names = await options.toolNames(child);
      const payload: SubagentPayload = {
        prompt: input.prompt,
        agentId: child.id,
        description: input.description,
        role: input.role,
        context: input.context,
        background: input.background,
        tools: `/v1/agents/${child.id}/tools`,
        toolNames: names,
        ...(links.name === undefined ? {} : { name: links.name }),
        ...(input.provider === undefined ? {} : { provider: input.provider }),
      };
      const request = requests.create({
        sessionId: parent.sessionId,
        kind: 'subagent',
        callId: call.callId,
        payload: payload as JsonValue,
        expiresAt: now() + limits(parent.tenantId).runTtlMs,
      });
      requestId = request.id;
      teams.putRun({ ...run, status: 'running', requestId });
      runs.watch(child.id, request);
    } catch (error) {
      await options.removeChild(child).catch(() => undefined);
      throw error;
    }
    if (input.background) return { ...base, status: 'running' };
    let outcome: ChildRun;
    try {
      outcome = await runs.outcome(child.id, call.signal);
    } catch (error) {
      // A foreground child is cancelled with the call that waits on it; the child itself stays.
      requests.cancel(requestId);
      throw error;
    }
    return {
      ...base,
      status: outcome.status,
      ...(outcome.output === undefined ? {} : { output: outcome.output }),
    };
  }

  function report(child: Agent, output: string): { parent_id: string; status: ChildStatus } {
    const run = teams.run(child.id);
    if (run === undefined)
      throw new SandboxError(
        'TOOL_FAILED',
        'report is for child agents; this agent has no parent to report to.',
      );
    checkBytes(child.tenantId, output, 'report');
    if (run.status === 'running') {
      runs.settle(child.id, run.requestId, { status: 'completed', output });
      // The run request on the parent's session is answered with the report; a wake-up request
      // stays for the client to answer when its turn ends.
      const request = run.requestId === undefined ? undefined : requests.get(run.requestId);
      if (request?.kind === 'subagent' && request.state === 'pending')
        requests.answer(request.id, { result: output });
    } else runs.reportIdle(run, output);
    return { parent_id: run.parentId, status: 'completed' };
  }

  /** The live descendants of `root`, breadth first. */
  function descendantsOf(tenantId: string, rootId: string): AgentRecord[] {
    const out: AgentRecord[] = [];
    const queue = [rootId];
    while (queue.length > 0) {
      const id = queue.shift() as string;
      for (const child of agents.children(tenantId, id)) {
        out.push(child);
        queue.push(child.id);
      }
    }
    return out;
  }

  function isDescendant(tenantId: string, ancestorId: string, record: AgentRecord): boolean {
    let current: AgentRecord | undefined = record;
    for (let hops = 0; current?.links !== undefined && hops < 64; hops++) {
      if (current.links.parentId === ancestorId) return true;
      current = agents.get(tenantId, current.links.parentId);
    }
    return false;
  }

  /** The agent `target` names for `from`: an own descendant by id, or (team reach) a member by name or id. */
  function resolve(from: Agent, target: string, reach: Reach): AgentRecord {
    const notFound = () =>
      new SandboxError(
        'NOT_FOUND',
        `No agent ${JSON.stringify(target.slice(0, 80))} you can reach; list_agents lists them.`,
      );
    if (target === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
    const byId = agents.get(from.tenantId, target);
    if (byId !== undefined && isDescendant(from.tenantId, from.id, byId)) return byId;
    if (reach === 'children') throw notFound();
    const team = teamIdOf(recordOf(from));
    if (team === undefined) throw notFound();
    const lead = agents.get(from.tenantId, team);
    if (lead !== undefined && (target === LEAD_NAME || target === lead.id)) {
      if (lead.id === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
      return lead;
    }
    const mate = agents
      .teammates(from.tenantId, team)
      .find((t) => t.id === target || t.links?.name === target);
    if (mate === undefined) throw notFound();
    if (mate.id === from.id) throw new SandboxError('INVALID_ARGUMENTS', 'That is this agent itself.');
    return mate;
  }

  /** No calls of it run, no run or wake-up of it is pending: a message would wait unread. */
  function idle(target: AgentRecord): boolean {
    if (options.busy(target.id)) return false;
    if (teams.run(target.id)?.status === 'running') return false;
    return !requests.list(target.id, 'pending').some((r) => r.kind === 'agent_wakeup');
  }

  function wake(target: AgentRecord, item: MailItem, callId: string): void {
    const fromName = nameOf(item.fromId);
    const request = requests.create({
      sessionId: target.id,
      kind: 'agent_wakeup',
      callId,
      payload: {
        agentId: target.id,
        from: item.fromId,
        ...(fromName === undefined ? {} : { fromName }),
        mailboxId: item.id,
        message: item.body,
        reason: item.kind === 'followup' ? 'followup' : 'message',
      },
      expiresAt: now() + limits(target.tenantId).runTtlMs,
    });
    const run = teams.run(target.id);
    if (run === undefined) return; // a lead: nothing of it is a run its parent waits on
    const { updatedAt: _u, requestId: _r, output: _o, ...rest } = run;
    teams.putRun({
      ...rest,
      ...(run.output === undefined ? {} : { output: run.output }),
      status: 'running',
      requestId: request.id,
    });
    runs.watch(target.id, request);
  }

  function send(
    from: Agent,
    target: string,
    message: string,
    how: { reach: Reach; kind: 'message' | 'followup'; wake: boolean; callId: string },
  ) {
    const to = resolve(from, target, how.reach);
    const item = mailboxes.post(
      { tenantId: from.tenantId, agentId: to.id, fromId: from.id, kind: how.kind, body: message },
      nameOf(from.id),
    );
    const woke = how.wake && idle(to);
    if (woke) wake(to, item, how.callId);
    return { message_id: item.id, agent_id: to.id, woke };
  }

  async function wait(agent: Agent, timeoutMs: number | undefined, signal: AbortSignal) {
    const max = limits(agent.tenantId).waitMaxMs;
    const items = await mailboxes.wait(agent.id, Math.min(timeoutMs ?? max, max), signal);
    return { messages: items.map((item) => messageView(item, nameOf)), timed_out: items.length === 0 };
  }

  function interrupt(by: Agent, target: string, reach: Reach) {
    const to = resolve(by, target, reach);
    const stopped = options.interrupt(to.id, by.id);
    const byName = nameOf(by.id);
    events.append([
      {
        sessionId: to.id,
        type: 'agent.interrupted',
        surface: 'current',
        data: { by: by.id, ...(byName === undefined ? {} : { byName }), batches: stopped },
      },
    ]);
    return { agent_id: to.id, interrupted_batches: stopped };
  }

  function summary(record: AgentRecord, self: string, role?: AgentSummary['role']): AgentSummary {
    const run = teams.run(record.id);
    const name = record.links?.name ?? (role === 'lead' ? LEAD_NAME : undefined);
    return {
      agent_id: record.id,
      ...(name === undefined ? {} : { name }),
      role: record.id === self ? 'self' : (role ?? record.links?.role ?? 'child'),
      ...(record.links === undefined ? {} : { parent_id: record.links.parentId }),
      depth: record.links?.depth ?? 0,
      ...(run === undefined
        ? {}
        : {
            description: run.description,
            status: run.status,
            ...(run.output === undefined ? {} : { output: run.output }),
          }),
      busy: options.busy(record.id),
      unread: teams.undelivered(record.id).length,
    };
  }

  function list(agent: Agent, scope: 'children' | 'descendants' | 'team'): AgentSummary[] {
    if (scope === 'children')
      return agents.children(agent.tenantId, agent.id).map((r) => summary(r, agent.id));
    if (scope === 'descendants')
      return descendantsOf(agent.tenantId, agent.id).map((r) => summary(r, agent.id));
    const team = teamIdOf(recordOf(agent));
    const lead = team === undefined ? undefined : agents.get(agent.tenantId, team);
    const members =
      lead === undefined
        ? []
        : [
            summary(lead, agent.id, 'lead'),
            ...agents.teammates(agent.tenantId, lead.id).map((r) => summary(r, agent.id, 'teammate')),
          ];
    const own = descendantsOf(agent.tenantId, agent.id).filter((r) => r.links?.role !== 'teammate');
    return [...members, ...own.map((r) => summary(r, agent.id))];
  }

  function deleted(agent: Agent): void {
    teams.cancelPending(agent.id);
    const run = teams.run(agent.id);
    if (run?.status !== 'running') return;
    // Cancelling the request settles the run through its watch; without one, settle it here.
    if (run.requestId === undefined || !requests.cancel(run.requestId))
      runs.settle(agent.id, run.requestId, { status: 'cancelled' });
  }

  return {
    spawn,
    report,
    send,
    wait,
    interrupt,
    list,
    mailbox: (agent, afterId, limit) =>
      teams
        .list(agent.id, {
          ...(afterId === undefined ? {} : { afterId }),
          ...(limit === undefined ? {} : { limit }),
        })
        .map((i) => messageView(i, nameOf)),
    take: (agent) => mailboxes.take(agent.id).map((i) => messageView(i, nameOf)),
    descendants: (agent) => descendantsOf(agent.tenantId, agent.id).reverse(),
    deleted,
    directory,
    limits,
    resume: runs.resume,
    close() {
      runs.close();
      mailboxes.close();
    },
  };
}
