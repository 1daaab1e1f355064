// The IPC vocabulary between the plugin runtime (API process) and a plugin worker process. Like the
// isolate host's (host/isolates/protocol.ts, whose shape checks and batching it reuses), messages
// carry strings and numbers only; values cross as JSON text so both sides check sizes before
// parsing. `id` names one loaded package (one isolate): a plugin that restarts or updates gets a
// new id, so late messages of its old isolate are recognised and dropped.
import type { Batch } from '../isolates/protocol.ts';
import type { PluginFailureKind, PluginLimits, PluginLogLine } from './types.ts';

export { clip, isMessage, unbatch } from '../isolates/protocol.ts';

/** The limits the worker and the prelude enforce inside one plugin's isolate. */
export type IsolateLimits = Pick<
  PluginLimits,
  | 'memoryMb'
  | 'cpuMsPerCallback'
  | 'callbackWallMs'
  | 'cpuMsPerMinute'
  | 'maxTools'
  | 'maxProviders'
  | 'maxProviderMethods'
  | 'maxCallsInFlight'
  | 'maxMessagesPerCallback'
  | 'logLinesPerCallback'
  | 'maxLogChars'
  | 'maxValueBytes'
>;

export type HostToPluginWorker =
  /** Make an isolate, evaluate the host body, apply the plugin; answered by `loaded` or `failed`. */
  | { t: 'load'; id: number; source: string; configJson: string; limits: IsolateLimits }
  /**
   * Run registered tool `token`, or a method of provider `token` (argsJson `{"method","input"}`);
   * answered by `done` with the same entry.
   */
  | { t: 'execute'; id: number; entry: number; token: number; argsJson: string; callId: string }
  /** A tool call the plugin made settled: `{"ok":true,"value"}` or `{"ok":false,"error":{"code","message"}}`. */
  | { t: 'result'; id: number; callId: number; envelope: string }
  /** One of the agent's events, for the plugin's listeners. */
  | { t: 'event'; id: number; name: string; dataJson: string }
  /** Dispose the plugin's scope, then its isolate; answered by `unloaded` (always). */
  | { t: 'unload'; id: number }
  | { t: 'shutdown' }
  | Batch<'result' | 'event' | 'execute'>;

export type PluginWorkerToHost =
  | { t: 'ready'; pid: number }
  /** The plugin applied; its registrations arrived before this. */
  | { t: 'loaded'; id: number; name: string }
  | {
      t: 'register';
      id: number;
      token: number;
      name: string;
      description: string;
      parametersJson: string;
      safe: boolean;
    }
  | { t: 'unregister'; id: number; token: number }
  /** An inspection provider; its methods share the tools' token space and run through `execute`. */
  | { t: 'provide'; id: number; token: number; name: string; description: string; methods: string[] }
  | { t: 'unprovide'; id: number; token: number }
  /** The plugin now listens (or no longer listens) to a host event. */
  | { t: 'listen'; id: number; name: string; on: boolean }
  /** The plugin calls an agent tool; `entry` is the tool call it runs inside, 0 for none. */
  | { t: 'call'; id: number; callId: number; name: string; argsJson: string; entry: number }
  /** `dropped`: lines the plugin wrote that were not sent (over its per-callback budget). */
  | { t: 'log'; id: number; level: PluginLogLine['level']; text: string; dropped?: number }
  /** A tool execute settled: `{"ok":true,"value"}` or `{"ok":false,"error":{"name","message"}}`. */
  | { t: 'done'; id: number; entry: number; envelope: string }
  /** The isolate is gone (it failed to load, or broke a budget); nothing more comes for this id. */
  | { t: 'failed'; id: number; kind: PluginFailureKind; message: string; stack?: string }
  /** Answer to `unload`: the isolate is disposed. */
  | { t: 'unloaded'; id: number }
  | Batch<
      | 'register'
      | 'unregister'
      | 'provide'
      | 'unprovide'
      | 'listen'
      | 'call'
      | 'log'
      | 'done'
      | 'failed'
      | 'loaded'
      | 'unloaded'
    >;

/** Longest error message or stack that crosses. */
export const MAX_ERROR_CHARS = 2_000;
export const MAX_STACK_CHARS = 4_000;
