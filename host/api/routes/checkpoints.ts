// An agent's checkpoints over HTTP (host/agents/checkpoints/ keeps them): GET
// /v1/agents/:id/checkpoints lists them, oldest first; POST /v1/agents/:id/rollback `{ callId }`
// (or `{ seq }`, where call ids repeat) restores the workspace's tracked files to just before that call, undoing it and every later
// tracked call, and logs `agent.rollback`. Refusals keep the workspace as it was: 404
// CHECKPOINT_NOT_FOUND, 409 CHECKPOINT_DROPPED, 409 ROLLBACK_UNSAFE, 409 ROLLBACK_BUSY (a call
// batch of the agent still runs: refused, not queued; ../../agents/checkpoints/agent.ts says why). Another tenant's agent
// answers 404 like an unknown one; with replicas the family's owner serves both. A rollback across a
// bash call the tenant had snapshotted (`checkpoints.snapshotBash`) restores the whole workspace
// from that snapshot, its answer's `workspace` saying so and what the sandbox's restart lost.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentCheckpoints } from '../../agents/checkpoints/agent.ts';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

const RollbackRequest = v.union([
  v.strictObject({
    callId: v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(500),
      v.description(
        "The call to roll back to: a write, edit, str_replace_editor or skill call, an upload (its client.* events' callId), or a checkpoint mark. A call id used twice names the newest.",
      ),
    ),
  }),
  v.strictObject({
    seq: v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.description(
        'The checkpoint to roll back to, by its `seq` (GET …/checkpoints): never reused, so it names one call where call ids repeat.',
      ),
    ),
  }),
]);

const CheckpointItem = v.object({
  seq: v.number(),
  callId: v.string(),
  tool: v.string(),
  at: v.string(),
  paths: v.array(v.string()),
  bytes: v.number(),
  label: v.optional(v.string()),
  kind: v.optional(
    v.pipe(
      v.picklist(['snapshot']),
      v.description(
        'snapshot: a whole-workspace snapshot taken before the call (bash, checkpoints.snapshotBash)',
      ),
    ),
  ),
});

const CheckpointList = v.object({ checkpoints: v.array(CheckpointItem) });

const RollbackView = v.object({
  callId: v.string(),
  seq: v.number(),
  undone: v.pipe(v.array(v.string()), v.description('The tracked calls undone, newest first')),
  restored: v.pipe(v.array(v.string()), v.description('Files written back as they were')),
  removed: v.pipe(v.array(v.string()), v.description('Files removed: they did not exist before')),
  workspace: v.optional(
    v.pipe(
      v.object({ fromCall: v.string(), lost: v.array(v.string()) }),
      v.description(
        'Present when the rollback crossed a snapshot checkpoint: the whole workspace was restored from the snapshot taken before call `fromCall` (then the files of tracked calls before it), its sandbox made again; `lost`: what that restart lost (processes, /tmp, terminals, jobs).',
      ),
    ),
  ),
});

const serviceOf = (agents: AgentService, agent: Agent): AgentCheckpoints => {
  const service = agents.checkpoints(agent);
  if (service === undefined)
    throw new SandboxError(
      'NOT_FOUND',
      'This service keeps no checkpoints (it runs without a data directory).',
    );
  return service;
};

export const checkpointRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/checkpoints',
    describeRoute({
      operationId: 'listCheckpoints',
      tags: ['agents'],
      description:
        "The agent's checkpoints, oldest first: one per tracked call (write, edit, str_replace_editor's changes, skill loads, file and archive uploads) and per checkpoint mark, within its tenant's bounds (PUT /v1/settings `checkpoints`).",
      responses: { 200: jsonResponse('The checkpoints', CheckpointList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ checkpoints: await serviceOf(agents, c.get('agent')).list() }),
  );
  app.post(
    '/v1/agents/:id/rollback',
    describeRoute({
      operationId: 'rollbackAgent',
      tags: ['agents'],
      description:
        "Restores the files the agent's tracked calls changed to what they were just before `callId`, undoing it and every later tracked call, and logs `agent.rollback`. Changes made by bash, jobs, terminals or MCP and plugin tools are not tracked: a file they changed after the last tracked call refuses the rollback (ROLLBACK_UNSAFE) rather than being overwritten.",
      requestBody: jsonRequest(RollbackRequest),
      responses: {
        200: jsonResponse('Rolled back', RollbackView),
        404: jsonResponse(
          'NOT_FOUND (the agent), CHECKPOINT_NOT_FOUND (no checkpoint of that call)',
          ErrorBody,
        ),
        409: jsonResponse(
          "CHECKPOINT_DROPPED: a checkpoint the rollback needs was dropped by the agent's bounds or never kept; ROLLBACK_UNSAFE: a file changed after the last tracked call (`data.path`); ROLLBACK_BUSY: a call batch of the agent is running (`data.running`): ask again once it ended, or interrupt it",
          ErrorBody,
        ),
      },
    }),
    loadAgent(agents),
    jsonBody(RollbackRequest),
    async (c) => {
      const target = c.get('body' as never) as v.InferOutput<typeof RollbackRequest>;
      return c.json(await serviceOf(agents, c.get('agent')).rollback(target, 'api'));
    },
  );
  return app;
};
