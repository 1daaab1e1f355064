// Valibot schemas of the v1 API: the same objects validate requests and generate /openapi.json
// (through hono-openapi's resolver). Limits here are the API's promises; change them knowingly.
import * as v from 'valibot';
import { AgentPolicy } from '../../policies/index.ts';
import { PRESETS } from '../agents/presets/index.ts';
import { MAX_REMOTE_TOOLS } from '../agents/remote-tools.ts';
import { canonicalRules } from '../egress/rules.ts';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { IDLE_POLL_STATES } from '../idle-poll.ts';
import { AnswerBody, REQUEST_KINDS } from '../requests/index.ts';
import { SANDBOX_RUNTIMES } from '../sandbox/runtimes.ts';
import { Goal, ScheduleShown, Todo } from '../tools/builtin/index.ts';
import { PRESENTATION_MODES, ToolName } from '../tools/index.ts';

export const ID = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'ids are 1-64 letters, digits, "_" or "-"'),
);
const names = v.pipe(v.array(ToolName), v.maxLength(256));
const jsonObject = v.record(v.string(), v.unknown());

/** Every stable error code (host/errors.ts), so that clients can switch on them. */
export const ErrorCodeSchema = v.picklist(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]);
export const ErrorBody = v.object({
  error: v.object({
    code: ErrorCodeSchema,
    message: v.string(),
    /** Client errors' structured detail (host/api/errors.ts publicData). */
    data: v.optional(v.record(v.string(), v.unknown())),
  }),
});

export const Health = v.object({
  ok: v.boolean(),
  version: v.string(),
  uptimeMs: v.number(),
  runtimes: v.optional(
    v.pipe(
      v.array(v.picklist(SANDBOX_RUNTIMES)),
      v.description("The sandbox runtimes this service's engine offers (absent when it could not be asked)"),
    ),
  ),
});

export const CreateTenant = v.strictObject({
  name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(200)),
});
export const TenantCreated = v.object({
  id: v.string(),
  name: v.string(),
  apiKey: v.string(),
  /** The id of the key above (to list or revoke it later). */
  keyId: v.optional(v.string()),
});
/** A tenant as the operator reads it: `state` says where its life is (active, deleting, deleted). */
export const TenantView = v.object({
  id: v.string(),
  name: v.string(),
  createdAt: v.number(),
  state: v.picklist(['active', 'deleting', 'deleted']),
  deletingSince: v.optional(v.number()),
  deletedAt: v.optional(v.number()),
  quotas: v.optional(v.object({ agents: v.optional(v.number()) })),
  /** While deleting (GET /v1/tenants/:id): what is left to remove, by kind. */
  remaining: v.optional(v.record(v.string(), v.number())),
});
export const TenantList = v.object({ tenants: v.array(TenantView) });

/** A new API key: a name for people and an optional expiry (epoch ms, in the future). */
export const CreateKey = v.strictObject({
  name: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(100))),
  expiresAt: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
});
export const ApiKeyView = v.object({
  id: v.string(),
  tenantId: v.string(),
  /** The key's first characters, in clear, to tell keys apart. */
  prefix: v.string(),
  createdAt: v.number(),
  name: v.optional(v.string()),
  expiresAt: v.optional(v.number()),
  revokedAt: v.optional(v.number()),
});
export const ApiKeyList = v.object({
  keys: v.array(ApiKeyView),
  next: v.optional(
    v.pipe(v.string(), v.description('Pass as `after` for the next page; absent on the last')),
  ),
});
export const KeyCreated = v.object({
  id: v.string(),
  /** The raw key: shown once, never again. */
  apiKey: v.string(),
  name: v.optional(v.string()),
  expiresAt: v.optional(v.number()),
});
/** A tenant's quotas as the operator sets them (the whole set; absent: no such bound). */
export const TenantQuotasBody = v.strictObject({
  /** Live top-level agents at once. */
  agents: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000))),
  /** MiB of workspace its live agents hold at once (the sum of their workspaces' sizes). */
  diskMb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1024 * 1024 * 1024))),
  /** Host disk its workspace snapshots may take together (bytes). */
  snapshotBytes: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER)),
  ),
  /** Bytes its durable log may hold (its budget in place of DSH_TENANT_LOG_BYTES). */
  logBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER))),
  /** Plugins its agents may run at once (its cap in place of DSH_PLUGINS_PER_TENANT). */
  plugins: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000))),
  /** Bytes its agents' checkpoints keep together, its oldest dropped past it (in place of DSH_TENANT_CHECKPOINT_MAX_BYTES). */
  checkpointBytes: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER)),
  ),
});
export const TenantLimits = v.object({
  quotas: v.object({
    agents: v.optional(v.number()),
    diskMb: v.optional(v.number()),
    snapshotBytes: v.optional(v.number()),
    logBytes: v.optional(v.number()),
    plugins: v.optional(v.number()),
    checkpointBytes: v.optional(v.number()),
  }),
  usage: v.object({
    agents: v.number(),
    diskMb: v.number(),
    snapshotBytes: v.optional(
      v.pipe(v.number(), v.description('Host disk its snapshots take; absent where the service keeps none')),
    ),
    logBytes: v.pipe(v.number(), v.description('Bytes its durable log holds (events plus payloads)')),
    checkpointBytes: v.optional(
      v.pipe(
        v.number(),
        v.description(
          "Bytes its agents' checkpoints hold on this control plane; absent where the service keeps none",
        ),
      ),
    ),
  }),
});
export const RevokeKeyQuery = v.object({
  /** `true` to revoke the tenant's last live key (it then has no way in until the operator makes one). */
  lastKey: v.optional(v.picklist(['true', 'false'])),
});

export const Restrict = v.union([v.strictObject({ allow: names }), v.strictObject({ deny: names })]);

export const SandboxOptions = v.strictObject({
  memoryMb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(64), v.maxValue(65_536))),
  cpus: v.optional(v.pipe(v.number(), v.minValue(0.1), v.maxValue(64))),
  pids: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(65_536))),
  diskMb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(16 * 1024 * 1024))),
  runtime: v.optional(
    v.pipe(
      v.picklist(SANDBOX_RUNTIMES),
      v.description(
        'The container runtime: runc (default) or gvisor, where the tenant may use it (else RUNTIME_NOT_ALLOWED) and the engine offers it (else RUNTIME_UNAVAILABLE)',
      ),
    ),
  ),
});

/** Budgets of an agent's run_code programs; the service's maxima are checked when it is created. */
export const CodeModeOptions = v.strictObject({
  cpuMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(3_600_000))),
  wallMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(86_400_000))),
});

export const RemoteTool = v.strictObject({
  name: ToolName,
  description: v.pipe(v.string(), v.minLength(1), v.maxLength(10_000)),
  parameters: jsonObject,
  timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(86_400_000))),
  concurrencySafe: v.optional(v.boolean()),
  /** The tool changes nothing (files, processes, the outside world): plan mode lets it run. Default false. */
  readOnly: v.optional(v.boolean()),
});
const remoteTools = v.pipe(v.array(RemoteTool), v.maxLength(MAX_REMOTE_TOOLS));

const egressHost = v.pipe(v.string(), v.minLength(1), v.maxLength(260));

/** One allowlist rule; also an agent's `egress.allow` entries. */
export const EgressRuleSchema = v.strictObject({
  host: v.pipe(egressHost, v.description('example.com, *.example.com (names below it), an IP address, or *')),
  ports: v.optional(
    v.pipe(
      v.array(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535))),
      v.minLength(1),
      v.maxLength(64),
    ),
  ),
  methods: v.optional(
    v.pipe(v.array(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/))), v.minLength(1), v.maxLength(16)),
  ),
});
export const EgressRules = v.pipe(v.array(EgressRuleSchema), v.maxLength(256));

export const CreateAgent = v.strictObject({
  preset: v.optional(v.picklist(PRESETS)),
  mode: v.optional(v.picklist(PRESENTATION_MODES)),
  restrict: v.optional(Restrict),
  /** An agent's policy: policies/ owns its shape and what it installs. */
  policy: v.optional(AgentPolicy),
  sandbox: v.optional(SandboxOptions),
  remoteTools: v.optional(remoteTools),
  /**
   * The client answers `subagent` requests: offers the workflow and ralph tools and the
   * child-control tools (subagent, subagent_fork, list_agents, send_message, interrupt_agent). Default false.
   */
  subagents: v.optional(v.boolean()),
  /** The Agent Teams composition: the team task board, spawn_teammate, followup_task, wait_agent and team-aware tools. Default false. */
  teams: v.optional(v.boolean()),
  /** Where the agent's children work: `shared` (its workspace, default) or `isolated` (a copy each). */
  childWorkspace: v.optional(v.picklist(['shared', 'isolated'])),
  fromSnapshot: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/),
      v.description(
        "A snapshot of the tenant's (POST /v1/agents/:id/snapshots) the agent's workspace starts as a copy of, made at creation; the disk size is the snapshot's (sandbox.diskMb left out). Another tenant's, or a deleted one: 404. With several nodes the agent goes on the snapshot's node: 503 NODE_CORDONED or NODE_UNREACHABLE (naming the node) while that node is cordoned or does not answer",
      ),
    ),
  ),
  codeMode: v.optional(CodeModeOptions),
  /** Offers web_fetch. Default false (the standard preset's `fetch: false`). */
  fetch: v.optional(v.boolean()),
  /** Narrows the tenant's egress allowlist for this agent (never widens it). */
  egress: v.optional(
    v.strictObject({
      allow: v.pipe(
        EgressRules,
        v.check((rules) => {
          try {
            canonicalRules(rules);
            return true;
          } catch {
            return false;
          }
        }, 'a host pattern is invalid: use example.com, *.example.com, an IP address or *'),
      ),
    }),
  ),
});

const epochMs = (what: string) => v.pipe(v.number(), v.description(`${what} (epoch ms)`));

/** An agent's pause (POST /v1/agents/:id/pause, or idle past its tenant's setting). */
export const AgentPause = v.object({
  mode: v.pipe(
    v.picklist(['stop', 'freeze']),
    v.description('stop: container stopped; freeze: processes frozen'),
  ),
  at: v.pipe(v.number(), v.description('When it was paused (epoch ms)')),
  by: v.pipe(
    v.picklist(['api', 'idle']),
    v.description("api: POST …/pause; idle: the tenant's idle setting"),
  ),
});

/** What POST /v1/agents/:id/pause and /resume answer. */
/** A workspace snapshot (host/agents/service/snapshots.ts). */
export const SnapshotView = v.object({
  id: v.string(),
  agentId: v.pipe(v.string(), v.description('The agent whose workspace it copies (it may be deleted since)')),
  node: v.pipe(v.string(), v.description('The node whose disk holds it')),
  sizeBytes: v.pipe(v.number(), v.description("The workspace's disk limit: an agent made from it gets it")),
  bytes: v.pipe(
    v.number(),
    v.description("Host disk it takes (a sparse copy): what the tenant's quota counts"),
  ),
  createdAt: v.number(),
});
export const SnapshotList = v.object({ snapshots: v.array(SnapshotView) });

export const PauseView = v.object({
  agentId: v.string(),
  paused: v.boolean(),
  pause: v.optional(AgentPause),
  kept: v.optional(v.pipe(v.array(v.string()), v.description('While paused: what it keeps'))),
  lost: v.optional(v.pipe(v.array(v.string()), v.description('While paused: what the pause ended'))),
  holds: v.optional(
    v.pipe(v.array(v.string()), v.description('While paused: what it still holds on the host')),
  ),
});

/** An agent's state as the instance that answers knows it (memory only: cheap in lists). */
export const AgentState = v.object({
  sandbox: v.pipe(
    v.picklist(['none', 'starting', 'ready', 'gone', 'paused', 'unreachable']),
    v.description(
      "none: no sandbox made yet; starting: being created or re-adopted; ready: held by this instance; gone: one was made but this instance holds none (the next use re-adopts or remakes it); paused: paused (POST /v1/agents/:id/pause, or idle past the tenant's setting); unreachable: the node that holds its sandbox and files does not answer now (`node` names it; its calls fail with NODE_UNREACHABLE until the node is back). A child sharing its parent's workspace shows the parent's.",
    ),
  ),
  node: v.optional(v.pipe(v.string(), v.description('With `unreachable`: the node that does not answer'))),
  pause: v.optional(v.pipe(AgentPause, v.description('While paused: how, since when, by whom'))),
  batches: v.pipe(v.number(), v.description('Call batches of the agent running now')),
  lastCallAt: v.optional(epochMs('When its last batch started or ended on this instance')),
});

/** Bytes used of a bound. */
export const UsedOf = v.object({ usedBytes: v.number(), limitBytes: v.number() });

export const AgentUsage = v.object({
  id: v.string(),
  state: AgentState,
  log: v.object({
    events: v.pipe(v.number(), v.description("Events in the agent's session log (its last seq)")),
    calls: v.pipe(
      v.number(),
      v.description('Tool calls in its log, inner calls of programs and workflows included'),
    ),
    lastEventAt: v.optional(epochMs('When its last event was appended')),
  }),
  disk: v.optional(
    v.pipe(
      UsedOf,
      v.description(
        "Its workspace's file system; absent where workspaces have no size limit or no sandbox exists",
      ),
    ),
  ),
  memory: v.optional(
    v.pipe(UsedOf, v.description("Its container's memory (page cache left out), when running")),
  ),
  cpuPercent: v.optional(
    v.pipe(v.number(), v.description('CPU over about the last second, 100 = one whole CPU, when running')),
  ),
});

export const WorkspaceList = v.object({
  workspaces: v.array(
    v.object({
      tenantId: v.string(),
      agentId: v.string(),
      disk: v.optional(UsedOf),
    }),
  ),
  next: v.optional(
    v.pipe(v.string(), v.description('Pass as `after` for the next page; absent on the last')),
  ),
});

export const Agent = v.object({
  id: v.string(),
  preset: v.picklist(PRESETS),
  mode: v.picklist(PRESENTATION_MODES),
  sessionId: v.string(),
  config: jsonObject,
  /** For a child or teammate: the agent that made it. */
  parentId: v.optional(v.string()),
  role: v.optional(v.picklist(['child', 'teammate'])),
  depth: v.optional(v.number()),
  /** A teammate's team (its lead's id) and its name there. */
  teamId: v.optional(v.string()),
  name: v.optional(v.string()),
  createdAt: v.number(),
  /** In lists and GET /v1/agents/:id: its state on the answering instance. */
  state: v.optional(AgentState),
});
export const AgentList = v.object({ agents: v.array(Agent) });

/** MCP's tool hints (host/tools/annotations.ts): what a client may assume, never enforced. */
export const ToolAnnotations = v.object({
  readOnlyHint: v.optional(v.boolean()),
  destructiveHint: v.optional(v.boolean()),
  idempotentHint: v.optional(v.boolean()),
  openWorldHint: v.optional(v.boolean()),
});
export const ToolSchema = v.object({
  name: v.string(),
  description: v.string(),
  parameters: jsonObject,
  annotations: v.optional(ToolAnnotations),
});
export const ToolList = v.object({ mode: v.picklist(PRESENTATION_MODES), tools: v.array(ToolSchema) });

export const Step = v.object({
  stepId: v.pipe(v.string(), v.description('Name it as `step` in POST /calls to run against this set')),
  expiresAt: v.pipe(v.number(), v.description('When the step stops being usable (epoch ms)')),
  ...ToolList.entries,
});

export const Call = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  arguments: v.optional(v.unknown(), () => ({})),
});
/** The first id that appears twice in a batch (results are matched to calls by id). */
const duplicateId = (calls: readonly { id: string }[]): string | undefined => {
  const seen = new Set<string>();
  for (const { id } of calls) {
    if (seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
};

/** Calls one request may start at once: a POST /calls batch, or a JSON-RPC batch on the MCP endpoint. */
export const MAX_CALLS_PER_BATCH = 64;

export const Calls = v.strictObject({
  calls: v.pipe(
    v.array(Call),
    v.minLength(1),
    v.maxLength(MAX_CALLS_PER_BATCH),
    v.check(
      (calls) => duplicateId(calls) === undefined,
      (issue) =>
        `call ids must be unique within a batch: ${JSON.stringify(duplicateId(issue.input as { id: string }[]))} appears more than once`,
    ),
  ),
  step: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(64),
      v.description(
        'Run against the tool set of this step (POST /v1/agents/{id}/steps) instead of a set resolved for this batch.',
      ),
    ),
  ),
});

const Content = v.variant('type', [
  v.object({ type: v.literal('text'), text: v.string() }),
  v.object({ type: v.literal('image'), data: v.string(), mimeType: v.string() }),
]);
export const Result = v.object({
  id: v.string(),
  name: v.string(),
  ok: v.boolean(),
  content: v.array(Content),
  value: v.optional(v.unknown()),
  error: v.optional(v.object({ code: ErrorCodeSchema, message: v.string() })),
  durationMs: v.number(),
  redacted: v.optional(
    v.pipe(
      v.literal(true),
      v.description('A policy replaced the content; the value is withheld (never stored or served).'),
    ),
  ),
  attempts: v.optional(
    v.pipe(
      v.number(),
      v.description('How many times the tool ran, when a policy retried it (absent: once).'),
    ),
  ),
});
export const Results = v.object({ results: v.array(Result) });

export const PayloadRef = v.pipe(
  v.object({
    pointer: v.pipe(v.string(), v.description('Where the value sits in `data` (JSON Pointer)')),
    sha256: v.string(),
    bytes: v.number(),
    dropped: v.optional(
      v.pipe(
        v.literal(true),
        v.description('Not kept (the tenant was over its log budget): hash and size only'),
      ),
    ),
  }),
  v.description(
    'A large value left in `data` as the marker { "$ref": "sha256:…", "bytes": n }; fetch it with GET /v1/agents/{id}/events/{seq}/payload?pointer=…',
  ),
);
export const Event = v.object({
  seq: v.number(),
  at: v.number(),
  type: v.string(),
  surface: v.picklist(['current', 'log-only']),
  callId: v.optional(v.string()),
  parentCallId: v.optional(v.string()),
  data: v.unknown(),
  payloads: v.optional(v.array(PayloadRef)),
});
export const EventsQuery = v.object({
  after: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is a sequence number'), v.transform(Number)),
  ),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,4}$/, 'limit is 1-5000'),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(5000),
    ),
  ),
});
export const EventPage = v.pipe(
  v.object({
    events: v.array(Event),
    next: v.pipe(
      v.number(),
      v.description('The last seq in this page: pass it as `after` for the next page'),
    ),
    firstSeq: v.pipe(
      v.number(),
      v.description(
        "Where the kept log starts: 1 until the tenant's retention removed older events (an `after` below firstSeq - 1 answers 410 LOG_TRUNCATED)",
      ),
    ),
  }),
  v.description("At most `limit` events and about the server's page byte bound (at least one event)"),
);
export const PayloadQuery = v.object({
  pointer: v.pipe(
    v.string(),
    v.maxLength(4096),
    v.regex(/^(\/[\s\S]*)?$/, "pointer is a JSON Pointer from the event's payloads"),
  ),
});

export const PathQuery = v.object({
  path: v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(4096),
    v.check((p) => !p.includes('\0'), 'path contains a NUL byte'),
  ),
});

export const RegisterRemoteTools = v.strictObject({ tools: v.pipe(remoteTools, v.minLength(1)) });
export const RemoteToolNames = v.object({ tools: v.array(v.string()) });

const RequestState = v.picklist(['pending', 'answered', 'expired', 'cancelled']);
export const RequestsQuery = v.object({ state: v.optional(RequestState) });
/** A host request as listed: one member per kind (host/requests/kinds), its payload typed. */
export const HostRequest = v.variant(
  'kind',
  REQUEST_KINDS.map((kind) =>
    v.object({
      id: v.string(),
      kind: v.literal(kind.name),
      callId: v.string(),
      state: RequestState,
      payload: kind.payload,
      answer: v.optional(v.unknown()),
      createdAt: v.number(),
      expiresAt: v.number(),
    }),
  ) as unknown as v.VariantOptions<'kind'>,
);
export const RequestList = v.object({ requests: v.array(HostRequest) });

/** The schedules as schedule_list shows them (host/tools/builtin/schedules.ts). */
export const ScheduleList = v.object({ schedules: v.array(ScheduleShown) });

/** A skill of the tenant's catalog (host/skills/catalog.ts); `files` only when one skill is read. */
export const Skill = v.object({
  name: v.string(),
  description: v.string(),
  digest: v.string(),
  bytes: v.number(),
  createdAt: v.number(),
  updatedAt: v.number(),
});
export const SkillDetail = v.object({
  ...Skill.entries,
  files: v.array(v.object({ path: v.string(), bytes: v.number() })),
});
export const SkillList = v.object({ skills: v.array(Skill) });

/** An answer: every request kind's answer shapes (host/requests/registry.ts); the route checks the request's own. */
export const Answer = AnswerBody;
export const Answered = v.object({ id: v.string(), state: v.string() });

const PluginFailure = v.object({
  kind: v.string(),
  message: v.string(),
  stack: v.optional(v.string()),
  at: v.number(),
});
/** A creator plugin (cordis_define) as lists show it: stored record plus what runs now. */
export const Plugin = v.object({
  id: v.string(),
  idPrefix: v.string(),
  state: v.picklist(['stopped', 'starting', 'running', 'failed']),
  currentPackageId: v.optional(v.string()),
  running: v.boolean(),
  name: v.optional(v.string()),
  tools: v.array(v.string()),
  providers: v.pipe(v.array(v.string()), v.description('Inspection providers it provides now')),
  error: v.optional(PluginFailure),
  createdAt: v.number(),
});
export const PluginList = v.object({ plugins: v.array(Plugin) });
const PackageBase = {
  id: v.string(),
  pluginId: v.string(),
  name: v.string(),
  purpose: v.string(),
  codeBytes: v.number(),
  createdAt: v.number(),
};
export const PluginDetail = v.object({
  ...Plugin.entries,
  packages: v.array(v.object({ ...PackageBase, hasHost: v.boolean(), hasClient: v.boolean() })),
  logs: v.array(v.object({ at: v.number(), level: v.string(), text: v.string() })),
  droppedLogs: v.number(),
  restarts: v.number(),
});
/** One immutable package with its code: `client` is what a client runs on its side. */
export const PluginPackage = v.object({
  ...PackageBase,
  code: v.object({ host: v.optional(v.string()), client: v.optional(v.string()) }),
});
/** The session's task list as todo_write last replaced it. */
export const TodoList = v.object({ todos: v.array(Todo) });
/** The session's current goal (null before create_goal). */
export const CurrentGoal = v.object({ goal: v.nullable(Goal) });
export const PlanMode = v.object({
  planMode: v.pipe(v.boolean(), v.description('While true, only read-only tools run (code PLAN_MODE)')),
});
export const SetPlanMode = v.strictObject({ planMode: v.boolean() });

/** PUT /v1/agents/:id/files: where the file went and how many bytes were written. */
export const Uploaded = v.object({
  path: v.pipe(v.string(), v.description('The confined path inside the workspace')),
  bytes: v.number(),
});

/** GET /v1/agents/:id/directory: a directory's entries, sorted by name, at most DIRECTORY_LIMIT. */
export const DirectoryListing = v.object({
  path: v.pipe(v.string(), v.description('The directory as asked for')),
  entries: v.array(
    v.object({
      name: v.string(),
      type: v.picklist(['file', 'directory', 'symlink', 'other']),
      size: v.number(),
    }),
  ),
  truncated: v.pipe(v.boolean(), v.description('More entries exist than were listed')),
});

/** PUT /v1/agents/:id/archive: what the tar held. */
export const ArchiveUploaded = v.object({ files: v.number(), bytes: v.number() });

/** A message of the client's conversation: text, or text parts. */
const ConversationMessage = v.strictObject({
  role: v.picklist(['user', 'assistant']),
  content: v.union([
    v.pipe(v.string(), v.maxLength(1_000_000)),
    v.pipe(
      v.array(v.strictObject({ type: v.literal('text'), text: v.pipe(v.string(), v.maxLength(1_000_000)) })),
      v.maxLength(256),
    ),
  ]),
});
export const AppendMessages = v.strictObject({
  messages: v.pipe(v.array(ConversationMessage), v.minLength(1), v.maxLength(256)),
});
export const MessagesAppended = v.object({
  events: v.array(v.object({ seq: v.number(), type: v.string() })),
});

/** One agent as list_agents shows it (host/teams/service.ts AgentSummary). */
export const AgentSummary = v.object({
  agent_id: v.string(),
  name: v.optional(v.string()),
  role: v.picklist(['lead', 'teammate', 'child', 'self']),
  parent_id: v.optional(v.string()),
  depth: v.number(),
  description: v.optional(v.string()),
  status: v.optional(v.picklist(['running', 'completed', 'failed', 'cancelled'])),
  output: v.optional(v.string()),
  busy: v.boolean(),
  unread: v.number(),
});
export const AgentSummaries = v.object({ agents: v.array(AgentSummary) });
export const ChildrenQuery = v.object({
  scope: v.optional(v.picklist(['children', 'descendants', 'team'])),
});
export const MailboxMessage = v.object({
  id: v.number(),
  from: v.string(),
  from_name: v.optional(v.string()),
  kind: v.picklist(['message', 'followup', 'report']),
  message: v.string(),
  at: v.string(),
});
export const Mailbox = v.object({ messages: v.array(MailboxMessage) });
export const MailboxQuery = v.object({
  after: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is a message id'), v.transform(Number))),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,4}$/, 'limit is 1-1000'),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(1000),
    ),
  ),
});

/** A node of DSH_NODES as the operator sees it (GET /v1/nodes). */
export const NodeView = v.object({
  name: v.string(),
  url: v.optional(v.string()),
  reachable: v.pipe(v.boolean(), v.description('Whether it answered its last probe or call')),
  unreachableSince: v.optional(epochMs('While unreachable: since when')),
  error: v.optional(
    v.pipe(v.string(), v.description('While unreachable: what the failing probe or call said')),
  ),
  cordoned: v.pipe(v.boolean(), v.description('Cordoned: it gets no new agents; its agents keep working')),
  agents: v.pipe(v.number(), v.description('Agents whose sandbox and files are on it (as recorded)')),
  capacity: v.optional(
    v.object({
      cpus: v.number(),
      memoryBytes: v.number(),
      diskFreeBytes: v.optional(v.number()),
      sandboxes: v.number(),
      running: v.number(),
      pool: v.object({ ready: v.number(), size: v.number() }),
      runtimes: v.array(v.string()),
      idlePoll: v.optional(
        v.pipe(
          v.picklist(IDLE_POLL_STATES),
          v.description(
            "The node agent's idle polling (its DSH_IDLE_POLL) as calls left it: off, unavailable (its device refused), idle, polling",
          ),
        ),
      ),
    }),
  ),
});
export const NodeList = v.object({ nodes: v.array(NodeView) });
