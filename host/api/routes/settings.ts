// The tenant's settings over HTTP, by its own key (host/agents/tenant-settings.ts owns their
// meaning): GET /v1/settings shows them with their defaults filled in; PUT replaces them whole.
// Today: `pause` (idle pauses and what a call to a paused agent does), `checkpoints` (what each
// agent keeps to roll its file calls back, and whether its model gets checkpoint and rollback)
// and `log` (its retention).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { DEFAULT_TENANT_SETTINGS, type TenantSettings } from '../../agents/tenant-settings.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';

/** A day: an idle time longer than that is no idle pause worth the name. */
const MAX_IDLE_SECONDS = 86_400;

const PauseSettings = v.strictObject({
  idleSeconds: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.maxValue(MAX_IDLE_SECONDS),
      v.description(
        "Seconds an agent may stay idle (no call, no running background job, no command running in a terminal) before it is paused (mode stop); 0 (default): never. Checked every 5 s; never later than the service's own idle stop (15 min).",
      ),
    ),
  ),
  onCall: v.optional(
    v.pipe(
      v.picklist(['resume', 'refuse']),
      v.description(
        'A call to a paused agent: resume (default) resumes it on the way, the call paying the start; refuse answers 409 AGENT_PAUSED until POST /v1/agents/:id/resume.',
      ),
    ),
  ),
});

/** The most a tenant may let one agent keep: 1 GiB of pre-images, 10000 checkpoints. */
const MAX_CHECKPOINT_BYTES = 1024 * 1024 * 1024;
const MAX_CHECKPOINTS = 10_000;

const CheckpointSettings = v.strictObject({
  maxBytes: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.maxValue(MAX_CHECKPOINT_BYTES),
      v.description(
        "Bytes of pre-images (the files' content before each tracked call) each agent keeps; its oldest checkpoints are dropped past it. Default 67108864 (64 MiB), at most 1 GiB.",
      ),
    ),
  ),
  maxCount: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.maxValue(MAX_CHECKPOINTS),
      v.description(
        'Checkpoints each agent keeps, the oldest dropped past it; 0: no tracking. Default 256, at most 10000.',
      ),
    ),
  ),
  tools: v.optional(
    v.pipe(
      v.boolean(),
      v.description(
        "Offer the agents' models the checkpoint and rollback tools (where their preset names them). Default false.",
      ),
    ),
  ),
  snapshotBash: v.optional(
    v.pipe(
      v.boolean(),
      v.description(
        'Take a snapshot of the whole workspace before each bash call, kept as its checkpoint (its host disk counted in maxBytes), so a rollback across it restores the whole workspace (the sandbox restarted: processes, /tmp, terminals and jobs lost). Only where workspaces can be snapshotted (else 501 SNAPSHOT_UNSUPPORTED). Default false.',
      ),
    ),
  ),
});

/** A hundred years, and 1 PiB: bounds that only refuse nonsense. */
const MAX_RETENTION_DAYS = 36_500;
const MAX_RETENTION_BYTES = 2 ** 50;

const whole = (max: number, description: string) =>
  v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(max), v.description(description)));

const LogSettings = v.strictObject({
  retentionDays: whole(
    MAX_RETENTION_DAYS,
    "Days an event of the durable log is kept; 0 (default): no limit of the tenant's own (the operator's DSH_LOG_RETENTION_MAX_DAYS still applies). Older events are removed in the background.",
  ),
  retentionBytes: whole(
    MAX_RETENTION_BYTES,
    "Bytes the log is cut down to, oldest events first; 0 (default): no limit of its own (the operator's budget DSH_TENANT_LOG_BYTES still refuses new calls when full).",
  ),
  deletedAgentHours: whole(
    MAX_RETENTION_DAYS * 24,
    "Hours a deleted agent's log is kept (then it goes whole); default 168.",
  ),
});

export const PutSettings = v.strictObject({
  pause: v.optional(PauseSettings),
  checkpoints: v.optional(CheckpointSettings),
  log: v.optional(LogSettings),
});

const SettingsView = v.object({
  pause: v.object({ idleSeconds: v.number(), onCall: v.picklist(['resume', 'refuse']) }),
  checkpoints: v.object({
    maxBytes: v.number(),
    maxCount: v.number(),
    tools: v.boolean(),
    snapshotBash: v.boolean(),
  }),
  log: v.object({ retentionDays: v.number(), retentionBytes: v.number(), deletedAgentHours: v.number() }),
});

export const settingsRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/settings',
    describeRoute({
      operationId: 'getSettings',
      tags: ['settings'],
      description: "The tenant's settings, defaults filled in.",
      responses: { 200: jsonResponse('The settings', SettingsView) },
    }),
    async (c) => c.json(await agents.settings.get(c.get('tenant').id)),
  );
  app.put(
    '/v1/settings',
    describeRoute({
      operationId: 'putSettings',
      tags: ['settings'],
      description:
        "Replaces the tenant's settings whole (a field left out takes its default). Other replicas on the same database follow within 10 s.",
      requestBody: jsonRequest(PutSettings),
      responses: {
        200: jsonResponse('The settings now', SettingsView),
        400: jsonResponse('Invalid', ErrorBody),
        501: jsonResponse('checkpoints.snapshotBash where workspaces cannot be snapshotted', ErrorBody),
      },
    }),
    jsonBody(PutSettings),
    async (c) => {
      const body = c.get('body' as never) as v.InferOutput<typeof PutSettings>;
      const settings: TenantSettings = {
        pause: { ...DEFAULT_TENANT_SETTINGS.pause, ...body.pause },
        checkpoints: { ...DEFAULT_TENANT_SETTINGS.checkpoints, ...body.checkpoints },
        log: { ...DEFAULT_TENANT_SETTINGS.log, ...body.log },
      };
      // Refused rather than kept and ignored: bash calls would run with no snapshot to roll back to.
      if (settings.checkpoints.snapshotBash) await agents.snapshots.usedBytes(c.get('tenant').id);
      return c.json(await agents.settings.put(c.get('tenant').id, settings));
    },
  );
  return app;
};
