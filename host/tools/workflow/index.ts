// Public entry of workflows: the workflow and ralph tools, their runner and the SpawnProvider port
// with its default (a `subagent` host request). Loads no isolate host: one is injected.

export { RALPH_DEFAULT_ROUNDS, RALPH_MAX_ROUNDS } from './ralph.ts';
export { createRequestSpawner, type RequestSpawnerOptions, SUBAGENT_TIMEOUT_MS } from './request-spawner.ts';
export {
  createWorkflowRunner,
  DEFAULT_WORKFLOW_WALL_MS,
  type WorkflowInput,
  type WorkflowMeta,
  type WorkflowRunner,
  type WorkflowRunnerOptions,
  type WorkflowValue,
} from './runner.ts';
export type { SpawnProvider, SpawnRequest, SpawnResult } from './spawn.ts';
export { NO_WORKFLOW_OUTPUT, ralphTool, registerWorkflowTools, workflowTool } from './tools.ts';
