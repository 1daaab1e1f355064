// Request bodies and queries: parsed safely, validated with valibot, documented from the same
// schema. Invariants: a JSON body never yields a `__proto__`, `constructor` or `prototype` key
// (the reviver drops them, at any depth), so nothing a client sends can reach an object
// prototype; malformed JSON (invalid UTF-8 included: it is refused, never rewritten to U+FFFD)
// is MALFORMED_JSON; schema failures name every issue's path. Upload bodies are never buffered:
// `uploadBody` streams them with the size limit enforced as the bytes arrive.

import { toJsonSchema } from '@valibot/to-json-schema';
import type { MiddlewareHandler } from 'hono';
import { resolver } from 'hono-openapi';
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import { capBytes } from '../sandbox/chunks.ts';

const POISON = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Matches text in which a key may be a POISON word. Text it does not match has none of them as
 * written and no `\u` escape that could spell one (no other JSON escape yields a letter): most
 * bodies, and they skip the reviver, which costs a call per value.
 */
const MAYBE_POISONED = /__proto__|constructor|prototype|\\u/;

/**
 * Past this nesting a body takes the reviver's path (below). V8's JSON.parse does not recurse, but
 * its reviver does, as does whatever walks the value next (validation, the log's shaping): the
 * reviver's recursion is the bound, and a body too deep for it is MALFORMED_JSON, never a stack
 * overflow in a handler. Tool arguments have their own, smaller bound.
 */
export const JSON_FAST_NESTING = 512;

/** Whether `text` opens more than `max` arrays or objects at once (strings skipped). */
export function nestsDeeper(text: string, max: number): boolean {
  // A body shorter than that cannot open that many.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

/**
 * JSON.parse that drops prototype-poisoning keys wherever they appear. Bodies that may hold one,
 * and bodies nesting deeper than JSON_FAST_NESTING, go through the reviver; one too deep for its
 * recursion is MALFORMED_JSON.
 */
export const parseJson = (text: string): unknown => {
  if (!MAYBE_POISONED.test(text) && !nestsDeeper(text, JSON_FAST_NESTING)) return JSON.parse(text);
  try {
    return JSON.parse(text, function reviver(key, value) {
      return POISON.has(key) ? undefined : value;
    });
  } catch (error) {
    if (error instanceof RangeError)
      throw new SandboxError('MALFORMED_JSON', 'The JSON nests arrays and objects too deeply.');
    throw error;
  }
};

const issuesOf = (issues: readonly v.BaseIssue<unknown>[]): string =>
  issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ');

export const invalid = (where: string, issues: readonly v.BaseIssue<unknown>[]): SandboxError =>
  new SandboxError('BAD_REQUEST', `Invalid ${where}: ${issuesOf(issues)}`, {
    data: { issues: issues.map((i) => ({ path: v.getDotPath(i) ?? '', message: i.message })) },
  });

/**
 * A client that goes away (or is cut off by the server's request timeout) mid-body is the client's
 * problem, not an internal error with a stack trace in the server log.
 */
const cutOff = (req: Request, error: unknown): unknown =>
  req.signal.aborted || (error as Error | undefined)?.message === 'aborted'
    ? new SandboxError('BAD_REQUEST', 'The request body ended before it was complete.')
    : error;

const payloadTooLarge = (maxBytes: number): SandboxError =>
  new SandboxError('PAYLOAD_TOO_LARGE', `The upload is larger than ${maxBytes} bytes.`, {
    data: { maxBytes },
  });

export interface UploadBody extends AsyncIterable<Uint8Array> {
  /**
   * After the upload was refused part-way (a hostile archive, a directory in the way): reads the
   * rest of the body and drops it, so that the client, still sending, gets the answer instead of a
   * connection closed under it. Stops (and lets the connection close) past `maxBytes` in all.
   */
  drain(): Promise<void>;
}

/**
 * The raw request body as a stream of bytes, for uploads: PAYLOAD_TOO_LARGE at once for a declared
 * Content-Length over `maxBytes`, else as soon as more than `maxBytes` arrived; BAD_REQUEST when
 * the client goes away mid-body. Nothing is buffered beyond the chunk in hand. A consumer that
 * stops early leaves the rest of the body unread (not cancelled): see `drain`.
 */
/** How long drain() waits for a consumer that stopped early to let go of the body. */
const DRAIN_UNLOCK_WAIT_MS = 2000;

export const uploadBody = (req: Request, maxBytes: number): UploadBody => {
  const declared = Number(req.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) throw payloadTooLarge(maxBytes);
  const body = req.body;
  let seen = 0;
  const chunks = async function* (): AsyncGenerator<Uint8Array> {
    if (body === null) return;
    try {
      for await (const chunk of body.values({ preventCancel: true })) {
        seen += chunk.byteLength;
        yield chunk;
      }
    } catch (error) {
      throw cutOff(req, error);
    }
  };
  const capped = capBytes(chunks(), maxBytes, () => payloadTooLarge(maxBytes));
  return {
    [Symbol.asyncIterator]: () => capped[Symbol.asyncIterator](),
    async drain() {
      if (body === null) return;
      // A consumer that stopped early may still hold the stream's reader for a moment (its
      // iterator is returned asynchronously, e.g. by Readable.from's destroy): wait for it, or the
      // unread rest would make the connection close under a client that is still sending.
      for (let waited = 0; body.locked && waited < DRAIN_UNLOCK_WAIT_MS; waited += 5)
        await new Promise((resolve) => setTimeout(resolve, 5));
      if (body.locked) return;
      try {
        if (seen <= maxBytes)
          for await (const chunk of body.values({ preventCancel: true })) {
            seen += chunk.byteLength;
            if (seen > maxBytes) break;
          }
        // Over the limit: no more reading; the connection closes with the answer.
        if (seen > maxBytes) await body.cancel();
      } catch {
        // the client went away: nothing left to answer
      }
    },
  };
};

/** Stateless between calls (never `stream: true`), so one serves every request. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads and parses the body as JSON; an empty body is `empty` when given, else MALFORMED_JSON. */
export const readJson = async (req: Request, empty?: () => unknown): Promise<unknown> => {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== '' && !/^application\/([\w.-]+\+)?json$/.test(type)) {
    throw new SandboxError('BAD_REQUEST', `Send the body as application/json (got ${type}).`);
  }
  let text: string;
  try {
    text = utf8.decode(await req.arrayBuffer());
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA')
      throw new SandboxError('MALFORMED_JSON', 'The request body is not valid UTF-8.');
    throw cutOff(req, error);
  }
  if (empty !== undefined && text.trim() === '') return empty();
  try {
    return parseJson(text);
  } catch (error) {
    if (error instanceof SandboxError) throw error;
    throw new SandboxError(
      'MALFORMED_JSON',
      `The request body is not valid JSON: ${(error as Error).message}`,
    );
  }
};

/** Validates the JSON body; the handler reads it with `c.req.valid('json' as never)` or `bodyOf(c)`. */
export const jsonBody =
  <S extends v.GenericSchema>(schema: S, options: { empty?: () => unknown } = {}): MiddlewareHandler =>
  async (c, next) => {
    const json = await readJson(c.req.raw, options.empty);
    // Every body is a JSON object; valibot's object schemas take an array as one (`[]` read as `{}`).
    if (Array.isArray(json))
      throw new SandboxError('BAD_REQUEST', 'The request body is a JSON object, not an array.');
    const result = v.safeParse(schema, json);
    if (!result.success) throw invalid('request body', result.issues);
    c.set('body' as never, result.output as never);
    await next();
  };

export const queryOf = <S extends v.GenericSchema>(
  schema: S,
  query: Record<string, string>,
): v.InferOutput<S> => {
  const result = v.safeParse(schema, query);
  if (!result.success) throw invalid('query', result.issues);
  return result.output;
};

/** The body of a POST that takes no options: none, or `{}` (a field is refused, never ignored). */
const NoOptions = v.pipe(
  v.strictObject({}),
  v.title('NoOptions'),
  v.description(
    'This request takes no options: send no body, or {}. Any field is refused (400 BAD_REQUEST).',
  ),
);

/**
 * A POST that acts on what its path names and takes no options: an empty body or `{}`. Anything
 * else (a field the client expects to matter, an array, a non-JSON body) is 400 BAD_REQUEST, so a
 * client's mistake is told, not silently dropped.
 */
export const noOptions = (): MiddlewareHandler => {
  const check = jsonBody(NoOptions, { empty: () => ({}) });
  // No body at all is no options whatever its Content-Type says (`curl -d ''` sends a form type).
  return (c, next) =>
    c.req.raw.body === null || c.req.header('content-length') === '0' ? next() : check(c, next);
};

/** OpenAPI requestBody of a route that takes noOptions(). */
export const noOptionsRequest = () => ({
  required: false,
  content: { 'application/json': { schema: resolver(NoOptions) } },
});

/** OpenAPI requestBody for a JSON schema. */
export const jsonRequest = (schema: v.GenericSchema) => ({
  required: true,
  content: { 'application/json': { schema: resolver(schema) } },
});

/**
 * The `text/event-stream` alternative of a JSON response (chosen by `Accept`), as the extension
 * `x-event-stream` of that response: each event name with the JSON Schema of its data. OpenAPI 3.1
 * cannot type a stream's events (3.2's itemSchema does), and a second media type in `content`
 * turns a generated client's response into `Json | string` (openapi-fetch unions every media
 * type), so the JSON form stays the one `content` names and typed clients get it as it is.
 */
export const sseAlternative = (events: Record<string, v.GenericSchema>, description: string) => ({
  'x-event-stream': {
    description,
    events: Object.fromEntries(
      Object.entries(events).map(([name, schema]) => [
        name,
        { data: toJsonSchema(schema, { errorMode: 'ignore' }) },
      ]),
    ),
  },
});

/** OpenAPI response entry for a JSON schema. */
export const jsonResponse = (description: string, schema: v.GenericSchema) => ({
  description,
  content: { 'application/json': { schema: resolver(schema) } },
});
