// The client's public types, each read off the generated client/openapi.ts (never copied by hand),
// so a change of a route's schema changes them, and the drift test makes sure it does.
import type { components, operations } from './openapi.ts';

/** The JSON body operation `O` answers with status `S`. */
type JsonOf<
  O extends keyof operations,
  S extends keyof operations[O]['responses'],
> = operations[O]['responses'][S] extends { content: { 'application/json': infer T } } ? T : never;
/** The JSON request body of operation `O`. */
type BodyOf<O extends keyof operations> = operations[O] extends {
  requestBody?: { content: { 'application/json': infer T } };
}
  ? T
  : never;

/** Every stable error code the service answers with (host/errors.ts on the server). */
export type ErrorCode = components['schemas']['ErrorBody']['error']['code'];
/** The body of every error response. */
export type ErrorBody = components['schemas']['ErrorBody'];

/** An agent as the service shows it. */
export type Agent = JsonOf<'getAgent', 200>;
/** An agent's state on the instance that answered, and its usage: log, disk, memory, CPU. */
export type AgentUsage = JsonOf<'getAgentUsage', 200>;
/** What `POST /v1/agents` takes: preset, mode, policy, sandbox limits, … */
export type CreateAgentOptions = BodyOf<'createAgent'>;
/** One tool call of a batch; `id` is optional here, the client numbers calls without one. */
export type ToolCall = Omit<BodyOf<'callTools'>['calls'][number], 'id'> & { id?: string };
/** One call's result: `ok`, the content the model sees, the structured `value`, or the `error`. */
export type ToolResult = JsonOf<'callTools', 200>['results'][number];
/** A tool the agent's model sees. */
export type Tool = JsonOf<'listTools', 200>['tools'][number];
/** One event of the agent's durable log. */
export type AgentEvent = JsonOf<'listEvents', 200>['events'][number];
/** A host request: something only the client can answer, typed by kind. */
export type HostRequest = JsonOf<'listRequests', 200>['requests'][number];
/** The kinds of host request: approval, remote_tool, subagent, user_question, … */
export type RequestKind = HostRequest['kind'];
/** The host request of one kind, its payload typed. */
export type RequestOf<K extends RequestKind> = Extract<HostRequest, { kind: K }>;
/** Every answer shape the service accepts; the request's kind decides which apply. */
export type RequestAnswer = BodyOf<'answerRequest'>;
/** What answering a request returns. */
export type Answered = JsonOf<'answerRequest', 200>;
/** What a file upload answers: the confined path and the bytes written. */
export type Uploaded = JsonOf<'writeFile', 200>;
/** What an archive upload answers: how many files and bytes were extracted. */
export type ArchiveUploaded = JsonOf<'uploadArchive', 200>;
/** What `agent.exec` takes besides the command: working directory, environment, timeout, stdin. */
export type ExecOptions = Omit<BodyOf<'execCommand'>, 'command'>;
/** How a command run with `agent.exec` ended: exit code, output (each stream cut at 1 MiB, flagged), duration. */
export type ExecResult = JsonOf<'execCommand', 200>;
/** What `agent.terminals.open` takes: the program (argv, default bash), size, working directory, name. */
export type OpenTerminalOptions = BodyOf<'openTerminal'>;
/** One of the agent's terminals (a PTY in its sandbox). */
export type TerminalInfo = JsonOf<'openTerminal', 201>;
/** One directory of the workspace as `agent.files.list` answers it: entries sorted by name, at most 1,000. */
export type DirectoryListing = JsonOf<'listDirectory', 200>;
/** What pausing or resuming an agent answers: whether it is paused, how, and what it keeps, lost and holds. */
export type PauseView = JsonOf<'pauseAgent', 200>;
/** How an agent is paused: `stop` (default) or `freeze`. */
export type PauseMode = NonNullable<BodyOf<'pauseAgent'>['mode']>;
/** One checkpoint of an agent: the tracked call (or mark), when, the files it named, the bytes kept. */
export type Checkpoint = JsonOf<'listCheckpoints', 200>['checkpoints'][number];
/** What a rollback did: the calls undone (newest first), the files written back and removed. */
export type RollbackView = JsonOf<'rollbackAgent', 200>;

// Written here rather than read off the document: /openapi.json types every result's `value` as
// any JSON, since it depends on the tool. tests/unit/client/tool-values.test.ts pins each of these
// to the value type of the service's own tool definition.

/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** run_code's `value`: the lines the program logged (console.log, …) and what it returned (absent for undefined). */
export interface RunCodeValue {
  logs: string[];
  value?: JsonValue;
}

/**
 * The `value` of the built-in tools whose result has a fixed shape, by tool name. A result whose
 * value a policy withheld (`redacted`) or a failed call has none.
 */
export interface ToolValues {
  run_code: RunCodeValue;
  /** A finished command, or the job a `run_in_background` call started. */
  bash:
    | { stdout: string; stderr: string; exitCode: number | null; timedOut: boolean; truncated: boolean }
    | { jobId: string; status: string };
  read: { file_path: string; content: string; startLine: number; lineCount: number; totalLines: number };
  write: { file_path: string; bytes: number; created: boolean };
  ask_user_question: { answers: { id: string; question: string; answer: string[] }[] };
}

/** The result of a call of tool `N`: its `value` typed when `N` is one of ToolValues, else ToolResult. */
export type ToolResultOf<N extends string> = N extends keyof ToolValues
  ? Omit<ToolResult, 'value'> & { value?: ToolValues[N] }
  : ToolResult;

/** A step: the tools the model sees, resolved once; name its `stepId` as CallOptions.step. */
export type Step = JsonOf<'openStep', 201>;
/** What `agent.remoteTools.register` takes: client-executed tools with JSON Schema parameters. */
export type RemoteToolsRegistration = BodyOf<'registerRemoteTools'>;
/** What registering remote tools answers. */
export type RemoteToolsRegistered = JsonOf<'registerRemoteTools', 200>;
/** One message of the client's conversation (`role`, text content) for `agent.messages.append`. */
export type ConversationMessage = BodyOf<'appendMessages'>['messages'][number];
/** What appending messages answers: the log events they became. */
export type MessagesAppended = JsonOf<'appendMessages', 201>;
/** What `agent.mcpServers.register` takes: a stdio server run in the sandbox, or a remote one. */
export type McpServerSpec = BodyOf<'registerMcpServer'>;
/** One of the agent's MCP servers: its state, tools, skipped tools, last error, restarts. */
export type McpServerInfo = JsonOf<'getMcpServer', 200>;
/** The agent's session task list, as `todo_write` last replaced it. */
export type Todos = JsonOf<'getTodos', 200>;
/** The agent's current goal (`goal: null` before `create_goal`). */
export type Goal = JsonOf<'getGoal', 200>;
/** One of the agent's schedules, with when it fires next. */
export type Schedule = JsonOf<'listSchedules', 200>['schedules'][number];
/** One agent this agent made, or a member of its team, as `list_agents` shows it. */
export type ChildAgent = JsonOf<'listChildren', 200>['agents'][number];
/** Which agents `agent.children` lists: its children (default), all its descendants, or its team. */
export type ChildrenScope = 'children' | 'descendants' | 'team';
/** One message of the agent's mailbox. */
export type MailboxMessage = JsonOf<'getMailbox', 200>['messages'][number];
/** One of the agent's creator plugins (state, current package, tools, last error). */
export type PluginInfo = JsonOf<'listPlugins', 200>['plugins'][number];
/** One plugin with its package list and recent logs. */
export type PluginDetail = JsonOf<'getPlugin', 200>;
/** One immutable plugin package, with its code. */
export type PluginPackage = JsonOf<'getPluginPackage', 200>;
/** One skill of the tenant's catalog. */
export type SkillInfo = JsonOf<'listSkills', 200>['skills'][number];
/** One skill with its file list (what putting a skill answers too). */
export type SkillDetail = JsonOf<'getSkill', 200>;
/** The tenant's egress settings as GET /v1/egress shows them (credentials by name only). */
export type EgressSettings = JsonOf<'getEgress', 200>;
/** What `client.egress.put` takes: the allowlist, credentials, budget and search provider. */
export type EgressUpdate = BodyOf<'putEgress'>;
/** A snapshot of an agent's workspace (docs/api.md, "Snapshots and forks"). */
export type SnapshotView = JsonOf<'snapshotAgent', 201>;
