// What one call batch shares as it goes through the pipeline (pipeline.ts) and its stages
// (stages.ts), and a call after the synchronous stage. Types only, so the stages and the pipeline
// both read them without importing each other.
import type { EventLog, SessionEventInput } from '../store/types.ts';
import type { Approvals } from './approvals.ts';
import type { Layer, RegistryState } from './layers.ts';
import type { Registration, ResolvedToolSet } from './resolved-set.ts';
import type { AgentScope, CallProvenance, ToolCall, ToolDefinition, ToolError } from './types.ts';

/** Everything one batch (or one program's inner calls) shares. */
export interface CallEnv {
  readonly state: RegistryState;
  readonly layer: Layer;
  readonly agent: AgentScope;
  readonly toolSet: ResolvedToolSet | undefined;
  readonly signal: AbortSignal;
  readonly log: EventLog | undefined;
  readonly approvals: Approvals | undefined;
  readonly concurrency: number;
  /** Whose code makes the calls of this env (a plugin's); none for the model's and the client's. */
  readonly provenance?: CallProvenance;
  /** Logs a settled call's result event (a batch logs its root results in model order). Default: append now. */
  readonly logResult?: (log: EventLog, event: SessionEventInput) => void;
  /** Told that a call logs no result (its tool.call was not recorded), so none is waited for. */
  readonly unlogged?: (callId: string, parentCallId: string | undefined) => void;
}

/** A call after the synchronous stage: looked up, validated and classified for the scheduler. */
export interface Prepared {
  readonly call: ToolCall;
  readonly parentCallId: string | undefined;
  readonly provenance: CallProvenance | undefined;
  readonly registration: Registration | undefined;
  readonly definition: ToolDefinition | undefined;
  readonly args: unknown;
  readonly failure: ToolError | undefined;
  readonly version: number;
  readonly safe: boolean;
}
