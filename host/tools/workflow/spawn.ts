// The port a workflow's `agent()` steps go through: SpawnProvider runs one subagent and resolves
// with its final answer. The service puts one in an agent's services (`services.spawn`) only when
// the agent was created with `subagents: true`; the workflow tools are offered only then.
// The default implementation (request-spawner.ts) is a `subagent` host request the client answers.
import type { JsonValue } from '../types.ts';

/** One subagent to run: the prompt and the step's options as the script and meta resolved them. */
export interface SpawnRequest {
  /** The subagent's task. */
  prompt: string;
  /** The workflow phase the step belongs to (agent()'s `phase` option, else the current phase). */
  phase?: string;
  /** Provider and model for the subagent (agent()'s options, else the phase's entry in meta.phases). */
  provider?: string;
  model?: string;
  /** The workflow this step belongs to (meta.name) and the call that runs it. */
  workflow: string;
  callId: string;
  sessionId: string;
  signal: AbortSignal;
}

/** A subagent's final answer: its text, and a structured value when the answer carries one. */
export interface SpawnResult {
  text: string;
  value?: JsonValue;
}

export interface SpawnProvider {
  /** Rejects with a SandboxError when the subagent fails, expires or `signal` aborts. */
  spawn(request: SpawnRequest): Promise<SpawnResult>;
}

declare module '../types.ts' {
  interface ToolServices {
    /** Runs subagents for workflow `agent()` steps; present only for agents created with `subagents: true`. */
    spawn?: SpawnProvider;
  }
}
