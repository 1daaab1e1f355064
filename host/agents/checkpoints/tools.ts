// The model's `checkpoint` and `rollback` tools, off by default: registered in the service's
// global layer with a condition, so they are offered only to agents whose tenant turned them on
// (PUT /v1/settings `checkpoints.tools: true`) and whose preset names them. `checkpoint` marks a
// place (its own call id) to return to; `rollback` restores the files the tracked calls since then
// changed, or refuses as POST /v1/agents/:id/rollback does (the model reads the refusal's reason).
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../../tools/define.ts';
import type { Disposer } from '../../tools/disposer.ts';
import type { ToolScope } from '../../tools/registry.ts';
import type { AgentScope, ExecContext } from '../../tools/types.ts';
import type { TenantSettingsReader } from '../tenant-settings.ts';
import type { AgentCheckpoints } from './agent.ts';

const serviceOf = (exec: ExecContext): AgentCheckpoints => {
  const service = exec.agent.services.checkpoints as AgentCheckpoints | undefined;
  if (service === undefined)
    throw new SandboxError(
      'NOT_FOUND',
      'This service keeps no checkpoints (it runs without a data directory).',
    );
  return service;
};

export const checkpointTool = defineTool({
  name: 'checkpoint',
  description:
    'Mark the workspace as it is now, to return to it later with rollback. Only changes made with write, edit, str_replace_editor and skill (and uploads) are undone by a rollback; those of bash only where each bash call is snapshotted (then the whole workspace returns, running processes ended).',
  parameters: v.object({
    label: v.optional(v.pipe(v.string(), v.maxLength(200), v.description('What this point is, for you'))),
  }),
  output: {
    schema: v.object({ checkpoint: v.string() }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `Checkpoint ${value.checkpoint} marked; rollback({checkpoint: "${value.checkpoint}"}) returns here.`,
      },
    ],
  },
  isReadOnly: () => true,
  async execute(args, exec) {
    const mark = await serviceOf(exec).mark(exec.callId, args.label);
    return { checkpoint: mark.callId };
  },
});

export const rollbackTool = defineTool({
  name: 'rollback',
  description:
    'Restore the files that write, edit and str_replace_editor changed since a checkpoint (or since a given call of those tools) to what they were then. Refused when one of them was changed since by bash or anything else untracked.',
  parameters: v.object({
    checkpoint: v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(500),
      v.description('The id checkpoint returned, or the call id of a write, edit or str_replace_editor call'),
    ),
  }),
  output: {
    schema: v.object({ undone: v.number(), restored: v.array(v.string()), removed: v.array(v.string()) }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `Rolled back ${value.undone} call${value.undone === 1 ? '' : 's'}: ${value.restored.length} file(s) restored, ${value.removed.length} removed${[...value.restored, ...value.removed].length === 0 ? '' : ` (${[...value.restored, ...value.removed].slice(0, 20).join(', ')})`}.`,
      },
    ],
  },
  async execute(args, exec) {
    const view = await serviceOf(exec).rollback({ callId: args.checkpoint }, 'tool');
    return { undone: view.undone.length, restored: view.restored, removed: view.removed };
  },
});

/** Registers both, offered where the agent's tenant turned them on. */
export function registerCheckpointTools(
  scope: ToolScope,
  settings: () => TenantSettingsReader | undefined,
): Disposer[] {
  const enabled = async ({ agent }: { agent: AgentScope }): Promise<boolean> => {
    const tenantId = agent.services.tenantId;
    if (typeof tenantId !== 'string' || agent.services.checkpoints === undefined) return false;
    return (await settings()?.get(tenantId))?.checkpoints.tools === true;
  };
  return [scope.register(checkpointTool, { when: enabled }), scope.register(rollbackTool, { when: enabled })];
}
