// planModePolicy: while the agent's session is in plan mode, a guard refuses every call that is not
// declared read-only (ToolDefinition.isReadOnly): writes, edits, shells, jobs, terminals, workflows,
// and plugin, MCP and remote tools unless they declare themselves read-only. A guard, not a prompt:
// it sees every call of the scope, the inner `tools.*` calls of run_code programs included, and no
// later policy can turn its denial back into permission. Code PLAN_MODE, so clients can tell it from
// a policy's DENIED.

// The session service is a ToolServices member declared by the builtin tools.
import type {} from '../host/tools/builtin/session.ts';
import type { Guard, GuardDenial } from '../host/tools/index.ts';
import type { Policy } from './types.ts';

const readOnly = (call: Parameters<Guard>[0]): boolean => {
  try {
    return call.definition.isReadOnly?.(call.arguments) === true;
  } catch {
    return false; // a classifier that fails counts as mutating
  }
};

export const planModeGuard: Guard = (call): GuardDenial | undefined => {
  if (call.agent.services.session?.planMode() !== true || readOnly(call)) return undefined;
  return {
    code: 'PLAN_MODE',
    reason: `Plan mode is on: ${call.name} could change the workspace, so it was not run. Only read-only tools work until the plan is approved; submit the complete plan with exit_plan_mode.`,
  };
};

export const planModePolicy = (): Policy => ({
  name: 'plan-mode',
  config: {},
  install: (scope) => scope.guard(planModeGuard),
});
