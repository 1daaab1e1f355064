// One loaded package seen from the API process: the isolate a worker holds for it (by id), what it
// registered through the capabilities (tools and inspection providers), the tool calls it runs and makes, its event subscription.
// Invariants: the host is the authority over registrations — whatever the isolate does, when the
// instance ends (unloaded, failed, its worker died) every tool and provider it registered is disposed, its
// pending executes are rejected, its own calls are aborted and its subscription is dropped, exactly
// once (`finish`); after that it posts nothing and ignores whatever still arrives for its id.
import { isSandboxError, messageOf, SandboxError } from '../errors.ts';
import type { PluginPlacement, PluginProcesses } from './processes.ts';
import type { IsolateLimits, PluginWorkerToHost } from './protocol.ts';
import { clip, MAX_ERROR_CHARS } from './protocol.ts';
import type {
  HostEventName,
  JsonSchema,
  JsonValue,
  PluginCapabilities,
  PluginFailure,
  PluginLimits,
  PluginLogLine,
  PluginProvider,
  PluginTool,
} from './types.ts';

/** Tool names a plugin may register (the registry decides which it may not shadow). */
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const MAX_DESCRIPTION_CHARS = 4000;
/** Events delivered to one plugin per second at most; the rest of that second is dropped. */
export const EVENTS_PER_SECOND = 100;

interface PendingExecute {
  resolve(value: JsonValue): void;
  reject(error: unknown): void;
  callId: string;
  controller: AbortController;
}

export interface InstanceOptions {
  id: number;
  pluginId: string;
  /** Its seat on a worker of its tenant, given back when the instance ends. */
  placement: PluginPlacement;
  processes: PluginProcesses;
  limits: PluginLimits;
  capabilities: PluginCapabilities;
  log(line: Omit<PluginLogLine, 'at'>, dropped?: number): void;
  /** The instance ended while loaded (not through unload): failed, or its worker died. */
  onEnd(failure: Omit<PluginFailure, 'at'>, suspect: boolean): void;
}

export interface Instance {
  readonly id: number;
  readonly ended: boolean;
  /** Names of the tools registered now. */
  tools(): string[];
  /** Ids of the inspection providers provided now. */
  providers(): string[];
  /** Resolves with the plugin's name once applied; rejects with its failure. */
  load(source: string, config: JsonValue): Promise<string>;
  /** Disposes the plugin's scope and its isolate; resolves when both are gone. */
  unload(): Promise<void>;
  handle(message: PluginWorkerToHost): void;
  /** The worker died; `excused`: another plugin on it is known to have brought it down. */
  lost(excused?: boolean): void;
}

export const isolateLimits = (limits: PluginLimits): IsolateLimits => ({
  memoryMb: limits.memoryMb,
  cpuMsPerCallback: limits.cpuMsPerCallback,
  callbackWallMs: limits.callbackWallMs,
  cpuMsPerMinute: limits.cpuMsPerMinute,
  maxTools: limits.maxTools,
  maxProviders: limits.maxProviders,
  maxProviderMethods: limits.maxProviderMethods,
  maxCallsInFlight: limits.maxCallsInFlight,
  maxMessagesPerCallback: limits.maxMessagesPerCallback,
  logLinesPerCallback: limits.logLinesPerCallback,
  maxLogChars: limits.maxLogChars,
  maxValueBytes: limits.maxValueBytes,
});

export const createInstance = (options: InstanceOptions): Instance => {
  const { id, pluginId, placement, processes, limits, capabilities } = options;
  const { worker } = placement;
  const registered = new Map<number, { name: string; dispose: () => void }>();
  /** Inspection providers by token (the tools' token space). */
  const provided = new Map<number, { name: string; dispose: () => void }>();
  const executes = new Map<number, PendingExecute>();
  const listening = new Set<string>();
  const own = new AbortController();
  let unsubscribe: (() => void) | undefined;
  let ended = false;
  let loaded = false;
  let nextEntry = 0;
  /**
   * When an entry nobody acknowledges (an event, a settled call) last went into the isolate: a crash
   * soon after it is blamed on this plugin, as one during its load or one of its executes is.
   */
  let lastEntryAt = Number.NEGATIVE_INFINITY;
  let eventWindow = 0;
  let eventsInWindow = 0;
  let loading: { resolve(name: string): void; reject(failure: Omit<PluginFailure, 'at'>): void } | undefined;
  let unloading: (() => void) | undefined;

  const post = (message: Parameters<PluginProcesses['post']>[1]): boolean => {
    if (ended) return false;
    if (message.t === 'event' || message.t === 'result') lastEntryAt = performance.now();
    return processes.post(worker, message);
  };

  /** Ends the instance: everything it holds in the host is undone, once. */
  function finish(): void {
    if (ended) return;
    ended = true;
    processes.release(placement);
    own.abort();
    unsubscribe?.();
    unsubscribe = undefined;
    for (const { dispose } of registered.values()) safely(dispose);
    registered.clear();
    for (const { dispose } of provided.values()) safely(dispose);
    provided.clear();
    for (const pending of executes.values()) {
      pending.controller.abort();
      pending.reject(
        new SandboxError(
          'ABORTED',
          `Plugin ${pluginId} stopped before the call into it (a tool or an inspection method) finished; cordis_inspect_self says why.`,
        ),
      );
    }
    executes.clear();
  }

  function fail(failure: Omit<PluginFailure, 'at'>, suspect = true): void {
    if (ended) return;
    const wasLoading = loading;
    loading = undefined;
    if (!loaded && wasLoading) {
      // The worker disposes the isolate of a plugin that failed; a refusal made here must ask it to.
      if (failure.kind === 'refused' || failure.kind === 'timeout') post({ t: 'unload', id });
      finish();
      return void wasLoading.reject(failure);
    }
    if (failure.kind === 'refused') post({ t: 'unload', id });
    finish();
    const done = unloading;
    unloading = undefined;
    if (done) return void done();
    options.onEnd(failure, suspect);
  }

  function execute(token: number, args: JsonValue, call: { callId: string; signal: AbortSignal }) {
    return new Promise<JsonValue>((resolve, reject) => {
      if (ended) {
        return reject(new SandboxError('ABORTED', `Plugin ${pluginId} is not running.`));
      }
      const argsJson = JSON.stringify(args ?? {});
      if (argsJson.length > limits.maxValueBytes) {
        return reject(
          new SandboxError('LIMIT_EXCEEDED', `The arguments are over ${limits.maxValueBytes} bytes of JSON.`),
        );
      }
      const entry = ++nextEntry;
      const controller = new AbortController();
      const settle = () => {
        clearTimeout(timer);
        call.signal.removeEventListener('abort', onAbort);
        executes.delete(entry);
        controller.abort();
      };
      const timer = setTimeout(() => {
        settle();
        reject(
          new SandboxError(
            'TOOL_TIMEOUT',
            `The plugin's tool or inspection method did not finish within ${limits.callWallMs} ms (its wall-clock budget).`,
          ),
        );
      }, limits.callWallMs);
      const onAbort = () => {
        settle();
        reject(new SandboxError('ABORTED', 'The call was cancelled.'));
      };
      if (call.signal.aborted) return onAbort();
      call.signal.addEventListener('abort', onAbort, { once: true });
      executes.set(entry, {
        resolve: (value) => {
          settle();
          resolve(value);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
        callId: call.callId,
        controller,
      });
      post({ t: 'execute', id, entry, token, argsJson, callId: call.callId });
    });
  }

  function register(message: Extract<PluginWorkerToHost, { t: 'register' }>): void {
    const { token, name, description } = message;
    let parameters: JsonSchema;
    try {
      parameters = JSON.parse(message.parametersJson) as JsonSchema;
    } catch {
      return void fail({ kind: 'refused', message: `tool ${clip(name, 80)}: its parameters are not JSON` });
    }
    if (!TOOL_NAME.test(name))
      return void fail({
        kind: 'refused',
        message: `tool ${clip(name, 80)}: a tool name is 1 to 64 letters, digits, _ or -`,
      });
    if (
      description.length > MAX_DESCRIPTION_CHARS ||
      registered.size >= limits.maxTools ||
      registered.has(token)
    )
      return void fail({ kind: 'refused', message: `tool ${name}: over the plugin's tool limits` });
    const tool: PluginTool = Object.freeze({
      pluginId,
      name,
      description,
      parameters,
      concurrencySafe: message.safe,
      execute: (args: JsonValue, call: { callId: string; signal: AbortSignal }) => execute(token, args, call),
    });
    try {
      registered.set(token, { name, dispose: capabilities.registerTool(tool) });
    } catch (error) {
      fail({ kind: 'refused', message: clip(`tool ${name}: ${messageOf(error)}`, MAX_ERROR_CHARS) });
    }
  }

  function provide(message: Extract<PluginWorkerToHost, { t: 'provide' }>): void {
    const { token, name, description } = message;
    const methods = [...message.methods];
    if (!TOOL_NAME.test(name) || !methods.every((m) => TOOL_NAME.test(m)))
      return void fail({
        kind: 'refused',
        message: `provider ${clip(name, 80)}: names are 1 to 64 letters, digits, _ or -`,
      });
    if (
      description.length > MAX_DESCRIPTION_CHARS ||
      methods.length === 0 ||
      methods.length > limits.maxProviderMethods ||
      provided.size >= limits.maxProviders ||
      provided.has(token) ||
      registered.has(token)
    )
      return void fail({ kind: 'refused', message: `provider ${name}: over the plugin's provider limits` });
    const provider: PluginProvider = Object.freeze({
      pluginId,
      name,
      description,
      methods,
      query(method: string, input: JsonValue, call: { callId: string; signal: AbortSignal }) {
        if (!methods.includes(method))
          return Promise.reject(
            new SandboxError('NOT_FOUND', `Provider ${name} of plugin ${pluginId} has no method ${method}.`),
          );
        return execute(token, { method, input: input ?? null }, call);
      },
    });
    try {
      if (capabilities.provide === undefined) throw new Error('this host takes no inspection providers');
      provided.set(token, { name, dispose: capabilities.provide(provider) });
    } catch (error) {
      fail({ kind: 'refused', message: clip(`provider ${name}: ${messageOf(error)}`, MAX_ERROR_CHARS) });
    }
  }

  function listen(name: string, on: boolean): void {
    if (on) listening.add(name);
    else listening.delete(name);
    if (listening.size > 0 && unsubscribe === undefined && capabilities.subscribe)
      unsubscribe = capabilities.subscribe(deliverEvent);
    else if (listening.size === 0 && unsubscribe !== undefined) {
      unsubscribe();
      unsubscribe = undefined;
    }
  }

  function deliverEvent(name: HostEventName, data: JsonValue): void {
    if (ended || !loaded || !listening.has(name)) return;
    const now = performance.now();
    if (now - eventWindow >= 1000) {
      eventWindow = now;
      eventsInWindow = 0;
    }
    if (++eventsInWindow > EVENTS_PER_SECOND) {
      if (eventsInWindow === EVENTS_PER_SECOND + 1)
        options.log({
          level: 'warn',
          text: `runtime: more than ${EVENTS_PER_SECOND} events in one second; the rest of this second's are dropped`,
        });
      return;
    }
    const dataJson = JSON.stringify(data);
    if (dataJson.length <= limits.maxValueBytes) post({ t: 'event', id, name, dataJson });
  }

  async function call(message: Extract<PluginWorkerToHost, { t: 'call' }>): Promise<void> {
    const parent = message.entry === 0 ? undefined : executes.get(message.entry);
    const signal = parent ? AbortSignal.any([own.signal, parent.controller.signal]) : own.signal;
    let envelope: string;
    try {
      const args = JSON.parse(message.argsJson) as JsonValue;
      const request = { name: message.name, args, ...(parent ? { parentCallId: parent.callId } : {}) };
      const value = await capabilities.callTool(request, signal);
      envelope = JSON.stringify({ ok: true, value: value ?? null });
      if (envelope.length > limits.maxValueBytes) {
        envelope = JSON.stringify({
          ok: false,
          error: {
            code: 'LIMIT_EXCEEDED',
            message: `the result of ${message.name} is over ${limits.maxValueBytes} bytes of JSON`,
          },
        });
      }
    } catch (error) {
      const code = isSandboxError(error) ? error.code : 'TOOL_FAILED';
      envelope = JSON.stringify({
        ok: false,
        error: { code, message: clip(messageOf(error), MAX_ERROR_CHARS) },
      });
    }
    post({ t: 'result', id, callId: message.callId, envelope });
  }

  function done(message: Extract<PluginWorkerToHost, { t: 'done' }>): void {
    const pending = executes.get(message.entry);
    if (pending === undefined) return;
    let parsed: { ok?: unknown; value?: JsonValue; error?: { name?: unknown; message?: unknown } };
    try {
      parsed = JSON.parse(message.envelope);
    } catch {
      return void pending.reject(
        new SandboxError('TOOL_FAILED', 'The plugin tool returned an unreadable result.'),
      );
    }
    if (parsed.ok === true) return void pending.resolve(parsed.value ?? null);
    const name = typeof parsed.error?.name === 'string' ? parsed.error.name : 'Error';
    const text = typeof parsed.error?.message === 'string' ? parsed.error.message : '';
    pending.reject(
      new SandboxError('TOOL_FAILED', clip(name === 'Error' ? text : `${name}: ${text}`, MAX_ERROR_CHARS)),
    );
  }

  return {
    id,
    get ended() {
      return ended;
    },
    tools: () => [...registered.values()].map((r) => r.name),
    providers: () => [...provided.values()].map((p) => p.name),
    load(source, config) {
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            fail({
              kind: 'timeout',
              message: `the plugin did not finish starting within ${limits.startWallMs} ms`,
            }),
          limits.startWallMs,
        );
        loading = {
          resolve: (name) => {
            clearTimeout(timer);
            resolve(name);
          },
          reject: (failure) => {
            clearTimeout(timer);
            reject(failure);
          },
        };
        const sent = post({
          t: 'load',
          id,
          source,
          configJson: JSON.stringify(config ?? {}),
          limits: isolateLimits(limits),
        });
        if (!sent) fail({ kind: 'crash', message: 'the plugin worker went away before the plugin loaded' });
      });
    },
    unload() {
      if (ended) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(
          () => {
            unloading = undefined;
            finish();
            resolve();
          },
          limits.cpuMsPerCallback * 2 + 2000,
        );
        unloading = () => {
          clearTimeout(timer);
          resolve();
        };
        if (loading) {
          loading.reject({ kind: 'apply', message: 'the plugin was stopped while it started' });
          loading = undefined;
        }
        if (!post({ t: 'unload', id })) {
          finish();
          unloading = undefined;
          clearTimeout(timer);
          resolve();
        }
      });
    },
    handle(message) {
      if (ended) return;
      switch (message.t) {
        case 'loaded':
          loaded = true;
          loading?.resolve(message.name);
          loading = undefined;
          return;
        case 'register':
          return register(message);
        case 'unregister': {
          const entry = registered.get(message.token);
          registered.delete(message.token);
          if (entry) safely(entry.dispose);
          return;
        }
        case 'provide':
          return provide(message);
        case 'unprovide': {
          const entry = provided.get(message.token);
          provided.delete(message.token);
          if (entry) safely(entry.dispose);
          return;
        }
        case 'listen':
          return listen(message.name, message.on);
        case 'call':
          return void call(message);
        case 'log':
          return options.log({ level: message.level, text: message.text }, message.dropped);
        case 'done':
          return done(message);
        case 'failed':
          return fail({
            kind: message.kind,
            message: message.message,
            ...(message.stack ? { stack: message.stack } : {}),
          });
        case 'unloaded': {
          finish();
          const resolve = unloading;
          unloading = undefined;
          resolve?.();
          return;
        }
      }
    },
    lost(excused = false) {
      const suspect =
        !excused &&
        (executes.size > 0 ||
          loading !== undefined ||
          performance.now() - lastEntryAt < limits.cpuMsPerCallback * 2 + 250);
      fail({ kind: 'crash', message: 'the plugin process died while this plugin ran' }, suspect);
    },
  };
};

const safely = (fn: () => void): void => {
  try {
    fn();
  } catch {
    // a registry's disposer that throws must not keep the others from running
  }
};
