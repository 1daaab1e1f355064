// Request bodies and queries: parsed safely, validated with valibot, documented from the same
// schema. Invariants: a JSON body never yields a `__proto__`, `constructor` or `prototype` key
// (the reviver drops them, at any depth), so nothing a client sends can reach an object
// prototype; malformed JSON (invalid UTF-8 included: it is refused, never rewritten to U+FFFD)
// is MALFORMED_JSON; schema failures name every issue's path.
import type { MiddlewareHandler } from 'hono';
import { resolver } from 'hono-openapi';
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';

const POISON = new Set(['__proto__', 'constructor', 'prototype']);

/** JSON.parse that drops prototype-poisoning keys wherever they appear. */
export const parseJson = (text: string): unknown =>
  JSON.parse(text, function reviver(key, value) {
    return POISON.has(key) ? undefined : value;
  });

const issuesOf = (issues: readonly v.BaseIssue<unknown>[]): string =>
  issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ');

export const invalid = (where: string, issues: readonly v.BaseIssue<unknown>[]): SandboxError =>
  new SandboxError('BAD_REQUEST', `Invalid ${where}: ${issuesOf(issues)}`, {
    data: { issues: issues.map((i) => ({ path: v.getDotPath(i) ?? '', message: i.message })) },
  });

/** Reads and parses the body as JSON; an empty body is `empty` when given, else MALFORMED_JSON. */
export const readJson = async (req: Request, empty?: () => unknown): Promise<unknown> => {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== '' && !/^application\/([\w.-]+\+)?json$/.test(type)) {
    throw new SandboxError('BAD_REQUEST', `Send the body as application/json (got ${type}).`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(await req.arrayBuffer());
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA')
      throw new SandboxError('MALFORMED_JSON', 'The request body is not valid UTF-8.');
    // A client that goes away (or is cut off by the server's request timeout) mid-body is the
    // client's problem, not an internal error with a stack trace in the server log.
    if (req.signal.aborted || (error as Error | undefined)?.message === 'aborted')
      throw new SandboxError('BAD_REQUEST', 'The request body ended before it was complete.');
    throw error;
  }
  if (empty !== undefined && text.trim() === '') return empty();
  try {
    return parseJson(text);
  } catch (error) {
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
    const result = v.safeParse(schema, await readJson(c.req.raw, options.empty));
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

/** OpenAPI requestBody for a JSON schema. */
export const jsonRequest = (schema: v.GenericSchema) => ({
  required: true,
  content: { 'application/json': { schema: resolver(schema) } },
});

/** OpenAPI response entry for a JSON schema. */
export const jsonResponse = (description: string, schema: v.GenericSchema) => ({
  description,
  content: { 'application/json': { schema: resolver(schema) } },
});
