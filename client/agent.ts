// One agent, as a handle: its tool calls (one, or a batch, with live progress), its workspace
// files, commands run in its sandbox (exec), its event log followed live with resume, the host
// requests it makes of the client, and its terminals (opened, listed, closed, attached to); its
// remote tools, steps, messages, MCP servers, plan mode, todos and goal, schedules, children,
// mailbox and plugins are small handles from handles.ts. The
// handle holds the agent's id and what the service said about it when the handle was made
// (`info`); every method asks the service again.
import { DshError, DshToolError } from './errors.ts';
import { type EventsOptions, followEvents } from './events.ts';
import { AgentFiles } from './files.ts';
import { type AgentHandles, agentHandles } from './handles.ts';
import { ok, pathOf, type Transport } from './http.ts';
import {
  listenForRequests,
  type OnRequestOptions,
  type RequestHandler,
  type RequestListener,
} from './requests.ts';
import { STREAM_CUT, withRetries } from './retry.ts';
import { readSse } from './sse.ts';
import { type DshTerminal, openTerminal, type TerminalOptions } from './terminal.ts';
import type {
  Agent,
  AgentEvent,
  AgentUsage,
  Answered,
  Checkpoint,
  ChildAgent,
  ChildrenScope,
  ErrorBody,
  ExecOptions,
  ExecResult,
  Goal,
  HostRequest,
  OpenTerminalOptions,
  PauseMode,
  PauseView,
  RequestAnswer,
  RequestKind,
  RollbackView,
  SnapshotView,
  Step,
  TerminalInfo,
  Todos,
  Tool,
  ToolCall,
  ToolResult,
  ToolResultOf,
} from './types.ts';

export interface CallOptions {
  /** Cancels the batch (the service cancels its calls cooperatively and logs it). */
  signal?: AbortSignal;
  /** Run against the tool set of this step (POST /v1/agents/{id}/steps). */
  step?: string;
  /**
   * Told each event of the batch as it happens (calls, inner calls, host requests, results). A
   * retry that the service answers from the first attempt's stored answer tells no more events.
   */
  onProgress?: (event: AgentEvent) => void;
  /**
   * The batch's Idempotency-Key: the service runs a key's batch at most once, and the client
   * retries the batch with it (network errors, 502, 503, 429 with Retry-After, a batch still in
   * progress on another replica). Default: a random one per batch. Pass your own to retry across
   * processes (the same key with the same calls).
   */
  idempotencyKey?: string;
}

export class DshAgent {
  readonly id: string;
  /** The agent as the service described it when this handle was made. */
  readonly info: Agent;
  /** The agent's workspace files. */
  readonly files: AgentFiles;
  /** The agent's host requests, listed and answered by hand (onRequest does it with a handler). */
  readonly requests: {
    list(state?: HostRequest['state']): Promise<HostRequest[]>;
    get(requestId: string): Promise<HostRequest>;
    answer(requestId: string, answer: RequestAnswer): Promise<Answered>;
  };
  /**
   * The agent's terminals (PTYs in its sandbox), whatever its preset: open one (default `bash`),
   * list them (the agent's own too), close one; attach to one with `terminal(id)`.
   */
  readonly terminals: {
    open(options?: OpenTerminalOptions): Promise<TerminalInfo>;
    list(): Promise<TerminalInfo[]>;
    close(terminalId: string): Promise<void>;
  };
  /** Client-executed tools: register them; their calls come as `remote_tool` requests (onRequest). */
  readonly remoteTools: AgentHandles['remoteTools'];
  /** The client's conversation, appended to the agent's log. */
  readonly messages: AgentHandles['messages'];
  /** The agent's MCP servers (tool sources): list, get, register, remove. */
  readonly mcpServers: AgentHandles['mcpServers'];
  /** Plan mode: while on, only read-only tools run. */
  readonly planMode: AgentHandles['planMode'];
  /** The agent's schedules: list, delete. */
  readonly schedules: AgentHandles['schedules'];
  /** The agent's mailbox: list (after a message id), take the unread messages once. */
  readonly mailbox: AgentHandles['mailbox'];
  /** The agent's creator plugins: list, get, one package's code. */
  readonly plugins: AgentHandles['plugins'];
  readonly #transport: Transport;
  readonly #handles: AgentHandles;

  constructor(transport: Transport, info: Agent) {
    this.#transport = transport;
    this.id = info.id;
    this.info = info;
    this.files = new AgentFiles(transport, info.id);
    const handles = agentHandles(transport, info.id);
    this.#handles = handles;
    this.remoteTools = handles.remoteTools;
    this.messages = handles.messages;
    this.mcpServers = handles.mcpServers;
    this.planMode = handles.planMode;
    this.schedules = handles.schedules;
    this.mailbox = handles.mailbox;
    this.plugins = handles.plugins;
    const { api } = transport;
    const id = info.id;
    this.requests = {
      list: async (state) =>
        (
          await ok(
            api.GET('/v1/agents/{id}/requests', {
              params: { path: { id }, query: state === undefined ? {} : { state } },
            }),
          )
        ).requests,
      get: (rid) => ok(api.GET('/v1/agents/{id}/requests/{rid}', { params: { path: { id, rid } } })),
      answer: (rid, body) =>
        ok(api.POST('/v1/agents/{id}/requests/{rid}', { params: { path: { id, rid } }, body })),
    };
    this.terminals = {
      open: (body = {}) => ok(api.POST('/v1/agents/{id}/terminals', { params: { path: { id } }, body })),
      list: async () =>
        (await ok(api.GET('/v1/agents/{id}/terminals', { params: { path: { id } } }))).terminals,
      close: async (tid) => {
        await ok(api.DELETE('/v1/agents/{id}/terminals/{tid}', { params: { path: { id, tid } } }));
      },
    };
  }

  /**
   * Runs `command` in the agent's sandbox as the agent (`bash -c command`: pipes and redirections
   * work, quoting is yours) and returns its exit code and output, a failing exit code included. A
   * command still running at `timeoutMs` is killed and throws DshError EXEC_TIMEOUT; `signal` kills
   * it too. The agent's tool policy does not apply (the key is its operator); the run is in its log.
   */
  async exec(command: string, options: ExecOptions & { signal?: AbortSignal } = {}): Promise<ExecResult> {
    const { signal, ...rest } = options;
    return ok(
      this.#transport.api.POST('/v1/agents/{id}/exec', {
        params: { path: { id: this.id } },
        body: { command, ...rest },
        ...this.#transport.cancelledBy(signal),
      }),
    );
  }

  /** Opens a step: the tools the model sees, resolved once; pass its `stepId` as CallOptions.step. */
  step(): Promise<Step> {
    return this.#handles.step();
  }

  /** The session's task list, as the agent's `todo_write` last replaced it. */
  todos(): Promise<Todos['todos']> {
    return this.#handles.todos();
  }

  /** The session's current goal; null before the agent's `create_goal`. */
  goal(): Promise<Goal['goal']> {
    return this.#handles.goal();
  }

  /** The agents this agent made (`children`, default), all its descendants, or its team. */
  children(scope?: ChildrenScope): Promise<ChildAgent[]> {
    return this.#handles.children(scope);
  }

  /** The tools the agent's model sees, exactly. */
  async tools(): Promise<Tool[]> {
    return (await ok(this.#transport.api.GET('/v1/agents/{id}/tools', { params: { path: { id: this.id } } })))
      .tools;
  }

  /**
   * Runs one tool call and returns its result; a call that ran and failed (unknown tool, invalid
   * arguments, denied, …) throws a DshToolError with the stable code. The result's `value` is typed
   * for the built-in tools of ToolValues (`run_code`: `{ logs, value }`).
   */
  async call<N extends string>(
    name: N,
    args: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<ToolResultOf<N>> {
    const [result] = await this.batch([{ name, arguments: args }], options);
    if (result === undefined) throw new DshError('INTERNAL', 'The service answered a call with no result.');
    if (!result.ok) throw new DshToolError(result);
    return result as ToolResultOf<N>;
  }

  /**
   * Runs calls as one batch (the service runs concurrency-safe ones together) and returns every
   * result in call order, failed ones included (`ok: false`). Calls without an id are numbered.
   * The batch carries an Idempotency-Key and is retried with it when its answer is lost (see
   * CallOptions.idempotencyKey): it runs once however often it is sent.
   */
  async batch(calls: readonly ToolCall[], options: CallOptions = {}): Promise<ToolResult[]> {
    const body = {
      calls: calls.map((call, i) => ({
        ...call,
        id: call.id ?? `c${i + 1}`,
        arguments: call.arguments ?? {},
      })),
      ...(options.step === undefined ? {} : { step: options.step }),
    };
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const { onProgress } = options;
    const send =
      onProgress === undefined
        ? async () => {
            const params = { path: { id: this.id }, header: { 'Idempotency-Key': key } };
            const call = this.#transport.api.POST('/v1/agents/{id}/calls', {
              params,
              body,
              ...this.#transport.cancelledBy(options.signal),
            });
            return (await ok(call)).results;
          }
        : () => this.#stream(body, key, onProgress, options.signal);
    return withRetries(send, this.#transport.retry, options.signal);
  }

  /** The event-stream form of the batch route: `progress`…, then `results` or `error`. */
  async #stream(
    body: unknown,
    key: string,
    onProgress: (event: AgentEvent) => void,
    signal: AbortSignal | undefined,
  ): Promise<ToolResult[]> {
    const response = await this.#transport.request(pathOf('/v1/agents/{id}/calls', { id: this.id }), {
      method: 'POST',
      headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
    for await (const message of readSse(response.body ?? new ReadableStream())) {
      if (message.event === 'progress') onProgress(JSON.parse(message.data) as AgentEvent);
      else if (message.event === 'results')
        return (JSON.parse(message.data) as { results: ToolResult[] }).results;
      else if (message.event === 'error') {
        const body = JSON.parse(message.data) as ErrorBody;
        const { code, message: text, data } = body.error;
        throw new DshError(code, text, { body, ...(data === undefined ? {} : { data }) });
      }
    }
    // Retried with the same key (retry.ts): the service answers with the batch's results.
    throw Object.assign(
      new DshError(
        'SANDBOX_UNAVAILABLE',
        'The call stream ended before its results; the batch may have run.',
      ),
      { [STREAM_CUT]: true },
    );
  }

  /** The agent's events, live: `for await (const e of agent.events({ after }))`, resumed after breaks. */
  events(options: EventsOptions = {}): AsyncGenerator<AgentEvent, void, undefined> {
    return followEvents(this.#transport, this.id, options);
  }

  /**
   * Answers host requests of `kind` (one or several) with `handler` until stopped: `ask`
   * approvals (`{ allow, reason? }`), remote tool calls, subagents, user questions, …
   */
  onRequest<K extends RequestKind>(
    kind: K | readonly K[],
    handler: RequestHandler<K>,
    options: OnRequestOptions = {},
  ): RequestListener {
    const kinds: readonly K[] = typeof kind === 'string' ? [kind as K] : (kind as readonly K[]);
    return listenForRequests(this, kinds, handler, options);
  }

  /** Attaches to terminal `terminalId` (from `terminals.open`, or the agent's terminal_open) as web streams. */
  terminal(terminalId: string, options: TerminalOptions = {}): Promise<DshTerminal> {
    return openTerminal(this.#transport, this.id, terminalId, options);
  }

  /**
   * The agent's state (sandbox, batches running, last call) and usage (its log's events and tool
   * calls, its workspace's disk, its container's memory and CPU). Never starts the sandbox.
   */
  async usage(): Promise<AgentUsage> {
    return ok(this.#transport.api.GET('/v1/agents/{id}/usage', { params: { path: { id: this.id } } }));
  }

  /**
   * Pauses the agent: its sandbox stopped (`stop`, default: no CPU, no memory held; processes,
   * jobs, terminals and /tmp lost) or frozen (`freeze`: processes kept, memory held), its files
   * kept. The answer says what it keeps, lost and holds. Its next call resumes it, unless the
   * tenant's settings refuse (`AGENT_PAUSED`). Pausing a paused agent changes nothing.
   */
  async pause(mode: PauseMode = 'stop'): Promise<PauseView> {
    return ok(
      this.#transport.api.POST('/v1/agents/{id}/pause', {
        params: { path: { id: this.id } },
        body: { mode },
      }),
    );
  }

  /** Starts a paused agent again and waits until its sandbox answers; a running agent stays as it is. */
  async resume(): Promise<PauseView> {
    return ok(this.#transport.api.POST('/v1/agents/{id}/resume', { params: { path: { id: this.id } } }));
  }

  /**
   * The agent's checkpoints, oldest first: one per tracked file call (write, edit,
   * str_replace_editor's changes, skill loads, file and archive uploads) and per `checkpoint` mark.
   */
  async checkpoints(): Promise<Checkpoint[]> {
    const listed = await ok(
      this.#transport.api.GET('/v1/agents/{id}/checkpoints', { params: { path: { id: this.id } } }),
    );
    return listed.checkpoints;
  }

  /**
   * Restores the files the tracked calls changed to what they were just before call `to` (or the
   * checkpoint of that `seq`, which names one call where call ids repeat, as the client's default
   * ids `c1`… do across batches), it and every later tracked call undone. Refused, with nothing changed: CHECKPOINT_NOT_FOUND,
   * CHECKPOINT_DROPPED, ROLLBACK_UNSAFE where bash or anything untracked changed one of them since, or
   * ROLLBACK_BUSY while a call batch of the agent still runs (ask again once it ended).
   */
  async rollback(to: string | { seq: number }): Promise<RollbackView> {
    return ok(
      this.#transport.api.POST('/v1/agents/{id}/rollback', {
        params: { path: { id: this.id } },
        body: typeof to === 'string' ? { callId: to } : to,
      }),
    );
  }

  /**
   * Takes a snapshot of the agent's workspace (consistent: its writes wait while it is copied);
   * `client.agents.create({ fromSnapshot: snapshot.id })` makes an agent from it.
   */
  async snapshot(): Promise<SnapshotView> {
    return ok(this.#transport.api.POST('/v1/agents/{id}/snapshots', { params: { path: { id: this.id } } }));
  }

  /** The agent's snapshots, oldest first. */
  async snapshots(): Promise<SnapshotView[]> {
    const { snapshots } = await ok(
      this.#transport.api.GET('/v1/agents/{id}/snapshots', { params: { path: { id: this.id } } }),
    );
    return snapshots;
  }

  /** Deletes the agent, its sandbox and its children. */
  async delete(): Promise<void> {
    await ok(this.#transport.api.DELETE('/v1/agents/{id}', { params: { path: { id: this.id } } }));
  }
}

/** The text of a result's content (its text parts, joined by newlines). */
export function textOf(result: ToolResult): string {
  return result.content
    .map((part) => (part.type === 'text' ? part.text : ''))
    .filter((text) => text !== '')
    .join('\n');
}
