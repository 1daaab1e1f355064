// The tenant's egress settings over HTTP, by its own key: GET /v1/egress shows the allowlist, the
// credentials by name (never a value), the budget in force and the search provider; PUT replaces
// them whole (a credential sent without `value` keeps its stored one). The operator's maxima
// (DSH_EGRESS_TENANT_*) bound the budget; internal addresses stay refused whatever the list says.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { EgressSettings, EgressSettingsInput } from '../../egress/settings.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { EgressRuleSchema, EgressRules, ErrorBody } from '../schemas.ts';

const hostPattern = v.pipe(v.string(), v.minLength(1), v.maxLength(260));

const Credential = v.strictObject({
  name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.-]{1,64}$/)),
  host: hostPattern,
  header: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  value: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(8192))),
  /** Also over plain http:// (default false: credentials travel only over TLS). */
  allowInsecure: v.optional(v.boolean()),
});

const Search = v.strictObject({
  provider: v.literal('searxng'),
  url: v.pipe(v.string(), v.maxLength(2048)),
});

const Budget = v.strictObject({
  connections: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  bytesPerHour: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
});

export const PutEgress = v.strictObject({
  allow: EgressRules,
  credentials: v.optional(v.pipe(v.array(Credential), v.maxLength(64))),
  budget: v.optional(Budget),
  search: v.optional(v.nullable(Search)),
});

const EgressView = v.object({
  allow: v.array(EgressRuleSchema),
  credentials: v.array(
    v.object({
      name: v.string(),
      host: v.string(),
      header: v.string(),
      allowInsecure: v.optional(v.boolean()),
    }),
  ),
  budget: v.object({ connections: v.number(), bytesPerHour: v.number() }),
  search: v.optional(Search),
});

export const egressRoutes = (settings: EgressSettings): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/egress',
    describeRoute({
      operationId: 'getEgress',
      tags: ['egress'],
      description:
        "The tenant's egress settings: allowlist, credentials by name (values are never shown), the budget in force, the search provider.",
      responses: { 200: jsonResponse('The settings', EgressView) },
    }),
    async (c) => c.json(await settings.view(c.get('tenant').id)),
  );
  app.put(
    '/v1/egress',
    describeRoute({
      operationId: 'putEgress',
      tags: ['egress'],
      description:
        "Replaces the tenant's egress settings. Default deny: only destinations a rule admits are reached (ports default to 80 and 443), and never an internal address. A credential is added by the gateway as `header: value` to https requests for its host (to plain http ones only with `allowInsecure: true`); leave `value` out to keep the stored one. An agent's own `egress.allow` can only narrow these rules.",
      requestBody: jsonRequest(PutEgress),
      responses: {
        200: jsonResponse('The settings now', EgressView),
        400: jsonResponse('Invalid (a pattern, a header, a budget over the maximum)', ErrorBody),
      },
    }),
    jsonBody(PutEgress),
    async (c) => c.json(await settings.put(c.get('tenant').id, c.get('body') as EgressSettingsInput)),
  );
  return app;
};
