// The finishing pass over the OpenAPI document hono-openapi generates from the routes: what every
// route of a kind really answers besides its own responses, stated once here instead of on each
// route (issue 17 §3). Authenticated routes answer 401; tenant routes 429 (request slots,
// connections); every /v1 route but health 503 while shutting down; routes with a body or a query
// 400 and (with a body) 413; routes with path parameters 404; routes under the request deadline
// 504. The errors are shared components (`ErrorBody`, `responses`), operations without a summary
// get one from their operationId (a route for several methods gets an id per method), a WebSocket
// route (answered 101) moves to `x-websockets` beside the paths, and the document names its
// server and licence, so that it lints
// clean with Redocly's recommended rules (tests/unit/api/openapi.test.ts) and generates a typed
// client (client/).
// Invariant: a route's own response for a status wins over the shared one.
import { ERROR_CODES } from '../errors.ts';

/** Minimal shapes of the parts of the document this pass reads and writes. */
interface Operation {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  responses?: Record<string, unknown>;
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  components?: Record<string, Record<string, unknown>>;
  info?: Record<string, unknown>;
  servers?: unknown[];
  [key: string]: unknown;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

const ErrorBody = {
  type: 'object',
  description:
    'Every error: a stable code (host/errors.ts), a message that says what to do next and, on client errors, the structured `data` of the code.',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CODES) },
        message: { type: 'string' },
        data: {
          type: 'object',
          additionalProperties: true,
          description:
            "The error's structured detail, on client errors (4xx) that have one: e.g. `currentRevision` of REVISION_CONFLICT, `limit` and `max` of CHILD_LIMIT_EXCEEDED, `issues` of BAD_REQUEST, `retryAfterS` of RATE_LIMITED. Never sent with 5xx errors.",
        },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
};

const errorResponse = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers === undefined ? {} : { headers }),
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

const RESPONSES = {
  BadRequest: errorResponse('The request is malformed or invalid (BAD_REQUEST, MALFORMED_JSON, …).'),
  Unauthorized: errorResponse('No API key, or one that is unknown or revoked (UNAUTHORIZED).', {
    'WWW-Authenticate': { description: 'The Bearer challenge', schema: { type: 'string' } },
  }),
  NotFound: errorResponse("No such resource for this tenant (NOT_FOUND; another tenant's ids too)."),
  PayloadTooLarge: errorResponse('The body is larger than the service takes (PAYLOAD_TOO_LARGE).'),
  RateLimited: errorResponse(
    'The tenant holds all its request slots or connections (RATE_LIMITED), or its address made too many failed key attempts (AUTH_THROTTLED); retry after Retry-After.',
    { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
  ),
  ShuttingDown: errorResponse('The service is shutting down (SHUTTING_DOWN); retry after it restarts.'),
  Timeout: errorResponse('The request took longer than its deadline (REQUEST_TIMEOUT).'),
};

type Shared = keyof typeof RESPONSES;

/**
 * The licence the document states, as package.json states it: UNLICENSED, npm's word for "no
 * licence is granted" (the project has not chosen one; this names that, it does not invent one).
 * LicenseRef- is SPDX's form for an identifier outside its list (OpenAPI 3.1 `identifier`).
 */
const LICENSE = { name: 'UNLICENSED (no licence granted yet)', identifier: 'LicenseRef-UNLICENSED' };

/** The shared error responses an operation answers, by status. */
const sharedOf = (
  method: string,
  path: string,
  operation: Operation,
  isDeadlineFree: (method: string, path: string) => boolean,
): [string, Shared][] => {
  if (!path.startsWith('/v1/') || path === '/v1/health') return [];
  const out: [string, Shared][] = [];
  const authenticated = operation.security === undefined || operation.security.length > 0;
  const query = (operation.parameters ?? []).some((p) => p.in === 'query');
  if (operation.requestBody !== undefined || query) out.push(['400', 'BadRequest']);
  if (authenticated) out.push(['401', 'Unauthorized']);
  if (path.includes('{')) out.push(['404', 'NotFound']);
  if (operation.requestBody !== undefined) out.push(['413', 'PayloadTooLarge']);
  if (path.startsWith('/v1/agents') || path.startsWith('/v1/skills')) out.push(['429', 'RateLimited']);
  out.push(['503', 'ShuttingDown']);
  const honoPath = path.replace(/\{([^}]+)\}/g, ':$1');
  if (!isDeadlineFree(method.toUpperCase(), honoPath)) out.push(['504', 'Timeout']);
  return out;
};

/** `callTools` → `Call tools`. */
const summaryOf = (operationId: string): string => {
  const words = operationId.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/** Finishes the generated document in place (see the header) and returns it. */
export const finishDocument = (
  document: OpenApiDocument,
  options: { isDeadlineFree: (method: string, path: string) => boolean },
): OpenApiDocument => {
  document.servers ??= [{ url: '/', description: 'This service (the host and port it listens on)' }];
  document.info = {
    ...document.info,
    license: { ...LICENSE, ...(document.info?.license as object | undefined) },
  };
  document.components ??= {};
  const components = document.components;
  components.schemas = { ...components.schemas, ErrorBody };
  components.responses = { ...components.responses, ...RESPONSES };
  const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) =>
      METHODS.has(method) ? [{ path, method, operation }] : [],
    ),
  );
  const uses = new Map<string, number>();
  for (const { operation } of operations)
    if (operation.operationId !== undefined)
      uses.set(operation.operationId, (uses.get(operation.operationId) ?? 0) + 1);
  for (const { path, method, operation } of operations) {
    if (operation.responses?.['101'] !== undefined) {
      // A WebSocket: no HTTP client calls it, so it is described beside the paths, not in them.
      document['x-websockets'] = { ...(document['x-websockets'] as object | undefined), [path]: operation };
      const item = document.paths?.[path];
      if (item !== undefined) delete item[method];
      if (item !== undefined && Object.keys(item).every((key) => !METHODS.has(key)))
        delete document.paths?.[path];
      continue;
    }
    const id = operation.operationId;
    if (id !== undefined) {
      operation.summary ??= summaryOf(id) + ((uses.get(id) ?? 0) > 1 ? ` (${method.toUpperCase()})` : '');
      // One route for several methods (app.on) shares its description: each method gets its own id.
      if ((uses.get(id) ?? 0) > 1)
        operation.operationId = `${id}${method[0]?.toUpperCase()}${method.slice(1)}`;
    }
    operation.responses ??= {};
    const responses = operation.responses;
    for (const [status, name] of sharedOf(method, path, operation, options.isDeadlineFree))
      responses[status] ??= { $ref: `#/components/responses/${name}` };
  }
  return document;
};
