// The tools/execute wrapper that checkpoints every call declaring the files it writes
// (ToolDefinition.writePaths: write, edit, str_replace_editor's mutating commands), installed in
// each agent's own scope (../runtime.ts), so the inner tools.* calls of programs and workflows are
// tracked too. Tools that declare no paths (bash, jobs, terminals, remote, MCP and plugin tools)
// are not: their changes are what a rollback detects as untracked and refuses to overwrite, unless
// the tenant sets `checkpoints.snapshotBash`: then a `bash` call (foreground, or starting a job)
// first takes a snapshot of the whole workspace, kept as that call's checkpoint (one that cannot be
// taken fails the call: it is never run uncovered).
import type { ExecuteWrapper } from '../../tools/hooks.ts';
import type { Disposer, ToolScope } from '../../tools/index.ts';
import type { AgentCheckpoints } from './agent.ts';

/** The untracked tools a snapshot covers (terminals are left out: a snapshot per keystroke costs too much). */
const SNAPSHOTTED = new Set(['bash']);

export const checkpointWrapper: ExecuteWrapper = async (view, next) => {
  const { call } = view;
  const service = call.agent.services.checkpoints as AgentCheckpoints | undefined;
  if (service === undefined) return next();
  const paths = call.definition.writePaths?.(call.arguments) ?? [];
  if (paths.length === 0) {
    if (SNAPSHOTTED.has(call.name)) await service.snapshotBefore({ callId: call.id, tool: call.name });
    return next();
  }
  return service.track({ callId: call.id, tool: call.name, paths }, next);
};

export const installCheckpoints = (scope: Pick<ToolScope, 'on'>): Disposer =>
  scope.on('tools/execute', checkpointWrapper);
