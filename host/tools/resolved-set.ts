// ResolvedToolSet: the step-owned selection of registrations made by `scope.resolve()`. Conditions
// are evaluated once here; the set is then used for the step's description and its whole batch.
// Invariants: a set admits only the exact registrations it saw (a same-name replacement, a new
// restriction or disposal of the set makes unstarted calls fail); it never changes after creation.
import { messageOf, SandboxError } from '../errors.ts';
import type { AgentScope, ModelSelection, ResolvedToolSetHandle, ToolDefinition } from './types.ts';

export interface ConditionContext {
  agent: AgentScope;
  modelSelection: ModelSelection | undefined;
  signal: AbortSignal;
}

/** Decides once per step whether a conditional tool is offered. Must not register or do tool work. */
export type Condition = (context: ConditionContext) => boolean | Promise<boolean>;

/** One registration of a definition in one layer. Identity matters: sets admit registrations. */
export interface Registration {
  readonly definition: ToolDefinition;
  readonly when: Condition | undefined;
  /** Cleared on dispose so a set holding it can tell. */
  active: boolean;
}

export interface ResolvedToolSet extends ResolvedToolSetHandle {
  /** The scope the set was resolved for; using it with another scope admits nothing. */
  readonly scopeId: number;
  /** The agent the set was resolved for (executors describe tools for it). */
  readonly agent: AgentScope;
  readonly modelSelection: ModelSelection | undefined;
  admits(registration: Registration): boolean;
  dispose(): void;
  [Symbol.dispose](): void;
}

export const resolveToolSet = async (
  scopeId: number,
  visible: Iterable<Registration>,
  context: ConditionContext,
): Promise<ResolvedToolSet> => {
  const admitted = new Set<Registration>();
  const pending: Promise<void>[] = [];
  for (const registration of visible) {
    const when = registration.when;
    if (when === undefined) {
      admitted.add(registration);
      continue;
    }
    const name = registration.definition.name;
    pending.push(
      (async () => {
        let on: boolean;
        try {
          on = await when(context);
        } catch (error) {
          throw new SandboxError(
            'TOOL_ACTIVATION_FAILED',
            `The availability condition of tool ${name} failed: ${messageOf(error)}. Fix the condition; the step cannot be prepared.`,
            { cause: error, data: { tool: name } },
          );
        }
        if (on === true) admitted.add(registration);
      })(),
    );
  }
  await Promise.all(pending);
  context.signal.throwIfAborted();
  let disposed = false;
  const set: ResolvedToolSet = {
    scopeId,
    agent: context.agent,
    modelSelection: context.modelSelection,
    get disposed() {
      return disposed;
    },
    admits: (registration) => !disposed && registration.active && admitted.has(registration),
    dispose: () => {
      disposed = true;
    },
    [Symbol.dispose]: () => {
      disposed = true;
    },
  };
  return set;
};
