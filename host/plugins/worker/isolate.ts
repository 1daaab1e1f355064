// One loaded package inside a plugin worker process: its isolate (isolated-vm, a heap limit of its
// own), the prelude (prelude.ts) and the entries into it. Every entry (start, a tool's execute, a
// settled call, an event, stop) is queued on isolated-vm's thread pool, so a plugin's loop or
// memory never holds the worker's thread or another plugin's isolate. An entry is bounded by the
// CPU it really uses (the worker's meter charges it every poll, host/isolates/cpu.ts: under load an
// entry waits for a core without paying for it) and, as a backstop, by a generous wall clock
// (isolated-vm's timeout, which counts waiting too). Invariants: once `ended`, the isolate is
// disposed and exactly one `failed` or `unloaded` went out for this id, and nothing else goes out
// for it; everything the isolate sends is untrusted text, size-checked and shape-checked before
// anything is forwarded.
import ivm from 'isolated-vm';
import type { Metered } from '../../isolates/cpu.ts';
import { BODY_FILENAME, BODY_LINE_OFFSET, PRELUDE_FILENAME, PRELUDE_SOURCE } from '../prelude.ts';
import type { HostToPluginWorker, IsolateLimits, PluginWorkerToHost } from '../protocol.ts';
import { clip, MAX_ERROR_CHARS, MAX_STACK_CHARS } from '../protocol.ts';
import { HOST_EVENTS, type PluginFailureKind, type PluginLogLine } from '../types.ts';

type LoadMessage = Extract<HostToPluginWorker, { t: 'load' }>;
type Entry = ivm.Reference<(...args: never[]) => void>;

const LEVELS = new Set<PluginLogLine['level']>(['debug', 'info', 'success', 'warn', 'error']);
const HOST_EVENT_NAMES = new Set<string>(HOST_EVENTS);
/** What isolated-vm's timeout rejects an entry with. */
const TIMED_OUT = 'Script execution timed out.';

export interface PluginIsolate extends Metered {
  readonly id: number;
  readonly memoryMb: number;
  /** Entries sent into the isolate and not yet returned (a crash is blamed on plugins with some). */
  readonly busy: boolean;
  execute(entry: number, token: number, argsJson: string, callId: string): void;
  deliver(results: ReadonlyArray<readonly [number, string]>): void;
  event(name: string, dataJson: string): void;
  /** Disposes the plugin's scope, then the isolate; `unloaded` follows (also when it already ended). */
  unload(): void;
  /**
   * Poll, after the meter's sample() and charge() (which end the plugin past a CPU budget or when
   * its isolate died): the CPU it was charged since the previous poll (ns), for the memory governor.
   */
  check(): number | undefined;
  /** The worker saw it hold more memory than its limit allows (memory.ts). */
  outOfMemory(): void;
  heapBytes(): Promise<number | undefined>;
  /** Ends without a message (the worker is shutting down). */
  dispose(): void;
}

/** The plugin's own frames, on the lines of its host body; prelude and boundary frames dropped. */
export const bodyStack = (stack: string): string | undefined => {
  const frames: string[] = [];
  for (const line of stack.split('\n').slice(1)) {
    const match = /^\s*at (?:(.*?) \()?plugin\.js:(\d+):(\d+)\)?\s*$/.exec(line);
    if (!match) continue;
    const where = `${BODY_FILENAME}:${Number(match[2]) - BODY_LINE_OFFSET}:${match[3]}`;
    const name = match[1] !== undefined && /^[\w$.<> ]{1,80}$/.test(match[1]) ? match[1] : undefined;
    frames.push(name === undefined || name === 'eval' ? `    at ${where}` : `    at ${name} (${where})`);
    if (frames.length >= 8) break;
  }
  return frames.length === 0 ? undefined : clip(frames.join('\n'), MAX_STACK_CHARS);
};

const str = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' ? clip(value, max) : undefined;
const int = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

export const loadPlugin = async (
  msg: LoadMessage,
  send: (message: PluginWorkerToHost) => void,
): Promise<PluginIsolate> => {
  const { id, limits } = msg;
  const isolate = new ivm.Isolate({
    memoryLimit: limits.memoryMb,
    // V8 lost control of the isolate: the documented answer is to end the process; the runtime
    // sees a crash and starts the plugins that were idle again.
    onCatastrophicError: (message) => {
      process.stderr.write(`plugin isolate catastrophic error: ${message}\n`);
      process.abort();
    },
  });
  let ended = false;
  let unloading = false;
  let inFlight = 0;
  /** isolated-vm's `cpuTime` at the last sample (time entered, not CPU: host/isolates/cpu.ts). */
  let enteredAt = 0n;
  /** Time entered since the last sample that belongs to entries that have returned (ns). */
  let enteredByDone = 0;
  /** The last sample (ns entered), and the CPU charged since the previous poll (ns). */
  let sampled = 0;
  let charged = 0;
  /** CPU charged to the entry that runs now (ns); entries run one after another. */
  let entryCpu = 0;
  const entryBudgetNs = limits.cpuMsPerCallback * 1_000_000;
  /** The CPU bucket (cpuMsPerMinute), in ns: full at load, refilled by wall time, drained by CPU. */
  const bucketNs = limits.cpuMsPerMinute * 1_000_000;
  let bucket = bucketNs;
  let refilledAt = performance.now();
  const calls = new Set<number>();
  const maxMessageChars = limits.maxValueBytes + 64 * 1024;

  const dispose = (): void => {
    try {
      if (!isolate.isDisposed) isolate.dispose();
    } catch {
      // already disposed by a memory failure
    }
  };
  const end = (kind: PluginFailureKind, message: string, stack?: string): void => {
    if (ended) return;
    ended = true;
    dispose();
    if (unloading) return void send({ t: 'unloaded', id });
    send({ t: 'failed', id, kind, message: clip(message, MAX_ERROR_CHARS), ...(stack ? { stack } : {}) });
  };
  const unloaded = (): void => {
    if (ended) return;
    ended = true;
    dispose();
    send({ t: 'unloaded', id });
  };
  const broken = (what: string) => end('limit', `the plugin runtime received a malformed ${what}`);

  const onOut = (type: unknown, json: unknown): void => {
    if (ended) return;
    if (typeof type !== 'string' || typeof json !== 'string') return void broken('message');
    if (json.length > maxMessageChars)
      return void end('limit', `a message of ${json.length} characters is over the limit`);
    let p: Record<string, unknown>;
    try {
      p = JSON.parse(json) as Record<string, unknown>;
      if (typeof p !== 'object' || p === null || Array.isArray(p)) return void broken(type);
    } catch {
      return void broken(type);
    }
    switch (type) {
      case 'started': {
        if (p.ok === true) return void send({ t: 'loaded', id, name: str(p.name, 200) ?? 'anonymous' });
        const kind = p.kind === 'compile' ? 'compile' : 'apply';
        const text = `${str(p.name, 200) ?? 'Error'}: ${str(p.message, MAX_ERROR_CHARS) ?? ''}`;
        return void end(kind, text, typeof p.stack === 'string' ? bodyStack(p.stack) : undefined);
      }
      case 'register': {
        const { token, name, description, parameters, safe } = p;
        if (!int(token) || typeof name !== 'string' || typeof description !== 'string')
          return void broken(type);
        if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
          return void broken(type);
        return void send({
          t: 'register',
          id,
          token,
          name,
          description,
          parametersJson: JSON.stringify(parameters),
          safe: safe === true,
        });
      }
      case 'unregister':
        if (!int(p.token)) return void broken(type);
        return void send({ t: 'unregister', id, token: p.token });
      case 'provide': {
        const { token, name, description, methods } = p;
        if (!int(token) || typeof name !== 'string' || typeof description !== 'string')
          return void broken(type);
        if (!Array.isArray(methods) || !methods.every((m) => typeof m === 'string')) return void broken(type);
        return void send({ t: 'provide', id, token, name, description, methods: methods as string[] });
      }
      case 'unprovide':
        if (!int(p.token)) return void broken(type);
        return void send({ t: 'unprovide', id, token: p.token });
      case 'listen':
        if (typeof p.name !== 'string' || !HOST_EVENT_NAMES.has(p.name)) return;
        return void send({ t: 'listen', id, name: p.name, on: p.on === true });
      case 'call': {
        const { id: callId, name, entry } = p;
        if (!int(callId) || typeof name !== 'string' || !int(entry) || calls.has(callId))
          return void broken(type);
        if (calls.size >= limits.maxCallsInFlight)
          return void end('limit', `more than ${limits.maxCallsInFlight} tool calls in flight`);
        calls.add(callId);
        return void send({ t: 'call', id, callId, name, entry, argsJson: JSON.stringify(p.args ?? {}) });
      }
      case 'log': {
        const level = LEVELS.has(p.level as PluginLogLine['level'])
          ? (p.level as PluginLogLine['level'])
          : 'info';
        const text = str(p.text, limits.maxLogChars);
        if (text === undefined) return void broken(type);
        return void send({ t: 'log', id, level, text, ...(int(p.dropped) ? { dropped: p.dropped } : {}) });
      }
      case 'done':
        if (!int(p.entry)) return void broken(type);
        return void send({ t: 'done', id, entry: p.entry, envelope: json });
      case 'limit':
        return void end('limit', str(p.message, MAX_ERROR_CHARS) ?? 'a limit was reached');
      case 'stopped':
        return void unloaded();
      default:
        return void broken('message type');
    }
  };

  let refs: { start: Entry; execute: Entry; deliver: Entry; event: Entry; stop: Entry };
  try {
    const context = await isolate.createContext();
    const script = await isolate.compileScript(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME });
    const install = await script.run(context, { reference: true });
    const out = new ivm.Callback(onOut, { ignored: true });
    const api = (await install.apply(undefined, [out], { result: { reference: true } })) as ivm.Reference<
      Record<string, unknown>
    >;
    const get = async (name: string) => (await api.get(name, { reference: true })) as Entry;
    refs = {
      start: await get('start'),
      execute: await get('execute'),
      deliver: await get('deliver'),
      event: await get('event'),
      stop: await get('stop'),
    };
  } catch (error) {
    dispose();
    throw error;
  }

  /** An entry returned: what it was entered since the last sample is not the next one's. */
  const returned = (): void => {
    inFlight--;
    entryCpu = 0;
    try {
      enteredByDone = Number(isolate.cpuTime - enteredAt);
    } catch {
      // disposed: the next sample ends the plugin
    }
  };

  /**
   * One entry, judged by state when it rejects: the isolate is gone (memory), isolated-vm's timeout
   * fired (the entry's wall-clock bound). Anything else is the plugin's own unhandled rejection,
   * which isolated-vm reports through the entry: logged, as Cordis reports a listener's error.
   */
  const enter = (ref: Entry, args: unknown[]): void => {
    if (ended) return;
    inFlight++;
    ref
      .apply(undefined, args as never[], { arguments: { copy: true }, timeout: limits.callbackWallMs })
      .then(returned, (error: unknown) => {
        returned();
        if (isolate.isDisposed) return end('memory', memoryMessage(limits));
        const message = error instanceof Error ? error.message : String(error);
        if (message === TIMED_OUT)
          return end(
            'timeout',
            `a callback of the plugin held its isolate longer than its wall-clock bound of ${limits.callbackWallMs} ms`,
          );
        if (!ended)
          send({
            t: 'log',
            id,
            level: 'error',
            text: clip(`unhandled rejection: ${message}`, limits.maxLogChars),
          });
      });
  };

  enter(refs.start, [msg.source, msg.configJson, JSON.stringify(limits), JSON.stringify(HOST_EVENTS)]);

  return {
    id,
    memoryMb: limits.memoryMb,
    get busy() {
      return inFlight > 0;
    },
    execute: (entry, token, argsJson, callId) => enter(refs.execute, [entry, token, argsJson, callId]),
    deliver(results) {
      const ids: number[] = [];
      const envelopes: string[] = [];
      for (const [callId, envelope] of results) {
        if (!calls.delete(callId)) continue;
        ids.push(callId);
        envelopes.push(envelope);
      }
      if (ids.length > 0) enter(refs.deliver, [ids, envelopes]);
    },
    event: (name, dataJson) => enter(refs.event, [name, dataJson]),
    unload() {
      if (ended) return send({ t: 'unloaded', id });
      if (unloading) return;
      unloading = true;
      enter(refs.stop, []);
      // A stop that never answers (its disposers loop until the timeout, or the isolate dies
      // meanwhile) still ends in `unloaded`: through end() above, or this deadline.
      setTimeout(unloaded, limits.cpuMsPerCallback * 2 + 1000).unref();
    },
    sample() {
      sampled = 0;
      if (ended) return 0;
      let entered: bigint;
      try {
        if (isolate.isDisposed) throw new Error('disposed');
        entered = isolate.cpuTime;
      } catch {
        end('memory', memoryMessage(limits));
        return 0;
      }
      sampled = Number(entered - enteredAt);
      enteredAt = entered;
      return sampled;
    },
    charge(cpuNs) {
      const done = Math.min(enteredByDone, sampled);
      enteredByDone = 0;
      if (ended) return;
      charged += cpuNs;
      // The entry that runs now pays for its part of the time entered; returned ones paid theirs.
      if (inFlight > 0 && sampled > 0) entryCpu += (cpuNs * (sampled - done)) / sampled;
      if (entryCpu > entryBudgetNs) return end('timeout', cpuMessage(limits));
      const now = performance.now();
      bucket = Math.min(bucketNs, bucket + ((now - refilledAt) * bucketNs) / 60_000);
      refilledAt = now;
      bucket -= cpuNs;
      if (bucket < 0)
        end('timeout', `the plugin used more CPU than its share of ${limits.cpuMsPerMinute} ms per minute`);
    },
    check() {
      const ran = charged;
      charged = 0;
      return ended ? undefined : ran;
    },
    outOfMemory: () => end('memory', memoryMessage(limits)),
    heapBytes: async () => {
      if (ended || isolate.isDisposed) return undefined;
      try {
        const heap = await isolate.getHeapStatistics();
        return heap.used_heap_size + heap.externally_allocated_size;
      } catch {
        return undefined;
      }
    },
    dispose() {
      ended = true;
      dispose();
    },
  };
};

const memoryMessage = (limits: IsolateLimits) => `the plugin ran out of memory (limit ${limits.memoryMb} MB)`;
const cpuMessage = (limits: IsolateLimits) =>
  `a callback of the plugin ran longer than its CPU budget of ${limits.cpuMsPerCallback} ms`;
