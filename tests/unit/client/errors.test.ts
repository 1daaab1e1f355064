// Error mapping of the client: a response the service refused becomes a DshError with the stable
// code of its body (typed as the ErrorCode union of /openapi.json), its status, the error's
// structured data, the body and Retry-After; a body that says no code (a proxy's page) gets the
// code of its status; a failed tool result becomes a DshToolError carrying the result.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { errorFromBody, errorFromResponse } from '../../../client/errors.ts';
import {
  DshError,
  DshToolError,
  type ErrorCode,
  isDshError,
  type ToolResult,
} from '../../../client/index.ts';
import type { ERROR_CODES } from '../../../host/errors.ts';

describe('client errors', () => {
  it('takes code, message, status and Retry-After from an error response', async () => {
    const response = new Response(JSON.stringify({ error: { code: 'RATE_LIMITED', message: 'slow down' } }), {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '5' },
    });
    const error = await errorFromResponse(response);
    expect(error).toBeInstanceOf(DshError);
    expect(error).toMatchObject({
      code: 'RATE_LIMITED',
      message: 'slow down',
      status: 429,
      retryAfterS: 5,
      body: { error: { code: 'RATE_LIMITED', message: 'slow down' } },
    });
    expect(error.data).toBeUndefined();
  });

  it("carries the service's structured data of the error as `data`", async () => {
    const body = {
      error: {
        code: 'REVISION_CONFLICT',
        message: 'The goal changed; read it again.',
        data: { goal_id: 'g1', currentRevision: 4 },
      },
    };
    const error = await errorFromResponse(
      new Response(JSON.stringify(body), { status: 409, headers: { 'content-type': 'application/json' } }),
    );
    expect(error).toMatchObject({ code: 'REVISION_CONFLICT', status: 409, body });
    expect(error.data).toEqual({ goal_id: 'g1', currentRevision: 4 });
  });

  it('falls back to the code of the status when the body has none', async () => {
    const error = await errorFromResponse(new Response('<html>Bad Gateway</html>', { status: 502 }));
    expect(error).toMatchObject({ code: 'INTERNAL', status: 502, body: '<html>Bad Gateway</html>' });
    expect(error.data).toBeUndefined();
    expect(error.message).toContain('HTTP 502: <html>Bad Gateway</html>');
    expect(errorFromBody(404, undefined).code).toBe('NOT_FOUND');
    expect(errorFromBody(401, {}).code).toBe('UNAUTHORIZED');
    expect(errorFromBody(400, null).code).toBe('BAD_REQUEST');
  });

  it('types the code as the union of the service’s codes, and narrows with isDshError', () => {
    expectTypeOf<ErrorCode>().toEqualTypeOf<keyof typeof ERROR_CODES>();
    const error: unknown = new DshError('NOT_FOUND', 'No agent "x".', { status: 404 });
    expect(isDshError(error)).toBe(true);
    expect(isDshError(error, 'NOT_FOUND')).toBe(true);
    expect(isDshError(error, 'CONFLICT')).toBe(false);
    expect(isDshError(new Error('x'))).toBe(false);
    if (isDshError(error, 'NOT_FOUND')) expectTypeOf(error.code).toEqualTypeOf<'NOT_FOUND'>();
  });

  it('carries a failed tool result', () => {
    const result: ToolResult = {
      id: 'c1',
      name: 'nope',
      ok: false,
      content: [{ type: 'text', text: 'Unknown tool nope' }],
      error: { code: 'UNKNOWN_TOOL', message: 'Unknown tool nope; the agent has: bash, read' },
      durationMs: 1,
    };
    const error = new DshToolError(result);
    expect(error).toBeInstanceOf(DshError);
    expect(error).toMatchObject({ code: 'UNKNOWN_TOOL', result, status: undefined, name: 'DshToolError' });
    expect(error.message).toContain('Unknown tool nope');
  });
});
