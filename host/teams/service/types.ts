// The team service's vocabulary: what its operations take and return (the snake_case shapes are
// what the model reads), its options and the service itself as the agent service sees it.
import type { Agent } from '../../agents/types.ts';
import type { RequestStore } from '../../requests/index.ts';
import type {
  AgentLinks,
  AgentRecord,
  AgentStore,
  ChildStatus,
  EventLog,
  MailKind,
  TeamStore,
  WakeBus,
} from '../../store/index.ts';
import type { TeamDirectory } from '../directory.ts';
import type { ChildLimits } from '../limits.ts';

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
    /** Wakes mailbox waits in other processes sharing the store (Store.wake). Default: none. */
    wake?: WakeBus;
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
  report(child: Agent, output: string): Promise<{ parent_id: string; status: ChildStatus }>;
  send(
    from: Agent,
    target: string,
    message: string,
    how: { reach: Reach; kind: 'message' | 'followup'; wake: boolean; callId: string },
  ): Promise<{ message_id: number; agent_id: string; woke: boolean }>;
  /** Takes the agent's unread messages, waiting for one up to `timeoutMs` (cut to the tenant's most). */
  wait(
    agent: Agent,
    timeoutMs: number | undefined,
    signal: AbortSignal,
  ): Promise<{ messages: MessageView[]; timed_out: boolean }>;
  interrupt(
    by: Agent,
    target: string,
    reach: Reach,
  ): Promise<{ agent_id: string; interrupted_batches: number }>;
  list(agent: Agent, scope: 'children' | 'descendants' | 'team'): Promise<AgentSummary[]>;
  /** The agent's mailbox after `afterId` (read or not). */
  mailbox(agent: Agent, afterId?: number, limit?: number): Promise<MessageView[]>;
  /** Takes (delivers) the agent's unread messages. */
  take(agent: Agent): Promise<MessageView[]>;
  /** The agent's live descendants, deepest first (deleted before it). */
  descendants(agent: Pick<Agent, 'id' | 'tenantId'>): Promise<AgentRecord[]>;
  /** The agent was deleted: its run is cancelled (its parent told), its unread mail cancelled. */
  deleted(agent: Agent): Promise<void>;
  readonly directory: TeamDirectory;
  limits(tenantId: string): ChildLimits;
  /** Watches the runs a previous process left pending (with `agentIds`, only theirs); resolves to how many. */
  resume(agentIds?: ReadonlySet<string>): Promise<number>;
  close(): void;
}
