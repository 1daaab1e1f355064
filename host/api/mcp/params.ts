// The params of the 2025-era requests whose SDK handler checks them with a plain Error: the SDK then
// answers JSON-RPC -32603 (Internal error) with its validator's raw issue list as the message, for
// what is the client's mistake. They are checked here first, with the SDK's own spec schemas, and
// refused as -32602 (Invalid params) naming each field. tools/call needs no such check: the SDK
// answers its params -32602 itself, and its arguments are the pipeline's (INVALID_ARGUMENTS).
// The items of a 2025-03-26 batch are checked the same way (batchParamsRefusals): a refused item is
// answered -32602 and taken out of what the SDK gets, the others are served.
import { specTypeSchemas } from '@modelcontextprotocol/server';

/** The spec type each checked method's request must be. */
const CHECKED = { initialize: 'InitializeRequest', 'tools/list': 'ListToolsRequest' } as const;

type Checked = keyof typeof CHECKED;

const isChecked = (method: unknown): method is Checked =>
  typeof method === 'string' && Object.hasOwn(CHECKED, method);

/** A path as the message names it: `params.clientInfo.name`. */
const pathOf = (path: readonly (PropertyKey | { key: PropertyKey })[] | undefined): string =>
  (path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.') || '(request)';

/**
 * The JSON-RPC error answering `body` when it is a request of a checked method whose params are
 * not its spec type's; undefined for anything else (batches and notifications included; a batch's
 * items are batchParamsRefusals').
 */
export function paramsRefusal(body: unknown) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { id, method } = body as { id?: unknown; method?: unknown };
  if (id === undefined || !isChecked(method)) return undefined;
  const checked = specTypeSchemas[CHECKED[method]]['~standard'].validate(body);
  if (!('issues' in checked) || checked.issues === undefined) return undefined;
  const issues = checked.issues.slice(0, 8).map((i) => `${pathOf(i.path)}: ${i.message}`);
  return {
    jsonrpc: '2.0',
    id,
    error: { code: -32602, message: `Invalid params of ${method}: ${issues.join('; ')}` },
  };
}

/** A batch's items split into the answers of those refused for their params and the rest, in order. */
export function batchParamsRefusals(items: readonly unknown[]): {
  refusals: NonNullable<ReturnType<typeof paramsRefusal>>[];
  rest: unknown[];
} {
  const refusals: NonNullable<ReturnType<typeof paramsRefusal>>[] = [];
  const rest: unknown[] = [];
  for (const item of items) {
    const refused = paramsRefusal(item);
    if (refused === undefined) rest.push(item);
    else refusals.push(refused);
  }
  return { refusals, rest };
}
