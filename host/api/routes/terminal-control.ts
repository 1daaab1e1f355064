// The client opens, lists and closes the agent's terminals: POST /v1/agents/:id/terminals starts a
// program on a PTY in the sandbox (default `bash`; as the agent, in a confined working directory),
// GET lists them (running and recently ended: the ones the agent opened with terminal_open and
// the bash tool's persistent shell too), DELETE /terminals/:tid hangs one up. A person then
// attaches to one over the WebSocket route (./terminals.ts). The sandbox's own limits hold (at most
// 16 running at once: LIMIT_EXCEEDED; 1 MiB of output kept per terminal). Every preset may: the key
// is the agent's operator, and POST /exec already runs any command; the terminal_* tools remain
// the creator preset's, for the model. Opening and closing are audited (../audit.ts).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { Sandbox, SandboxTerminals } from '../../sandbox/types.ts';
import type { ClientAudit } from '../audit.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';

const TERMINAL_ID = /^[A-Za-z0-9_-]{1,64}$/;
const dimension = (what: string) =>
  v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000), v.description(what)));

export const OpenTerminal = v.strictObject({
  command: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          v.string(),
          v.minLength(1),
          v.maxLength(4096),
          v.check((s) => !s.includes('\0'), 'an argument contains a NUL byte'),
        ),
      ),
      v.minLength(1),
      v.maxLength(64),
      v.description("The program and its arguments, no shell (default ['bash'])"),
    ),
  ),
  cols: dimension('Columns (default 80)'),
  rows: dimension('Rows (default 24)'),
  cwd: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(4096),
      v.check((s) => !s.includes('\0'), 'cwd contains a NUL byte'),
      v.description('Working directory inside the workspace (default: the workspace root)'),
    ),
  ),
  name: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[A-Za-z0-9._-]{1,64}$/, 'a name is 1-64 of A-Z a-z 0-9 . _ -'),
      v.description('Unique among running terminals'),
    ),
  ),
});

export const Terminal = v.object({
  id: v.pipe(v.string(), v.description('Attach with the WebSocket /v1/agents/{id}/terminals/{tid}')),
  name: v.nullable(v.string()),
  command: v.array(v.string()),
  cwd: v.string(),
  cols: v.number(),
  rows: v.number(),
  status: v.picklist(['running', 'exited']),
  exitCode: v.nullable(v.number()),
  signal: v.nullable(v.string()),
  startedAt: v.number(),
  endedAt: v.nullable(v.number()),
  startOffset: v.pipe(v.number(), v.description('Oldest output byte still buffered (replay from here)')),
  endOffset: v.number(),
  busy: v.pipe(v.boolean(), v.description('A command other than the program itself runs in the foreground')),
});
export const TerminalList = v.object({ terminals: v.array(Terminal) });

/** A terminal as the API shows it: the sandbox's pid stays inside. */
const terminalView = (t: v.InferOutput<typeof Terminal> & { pid?: unknown }) => {
  const { pid: _pid, ...view } = t;
  return view;
};

const terminalsOf = (sandbox: Sandbox): SandboxTerminals => {
  if (sandbox.terminals === undefined)
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      "This agent's sandbox has no terminals (its provider does not support them).",
    );
  return sandbox.terminals;
};

export const terminalControlRoutes = (agents: AgentService, audit: ClientAudit): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/terminals',
    describeRoute({
      operationId: 'openTerminal',
      tags: ['terminals'],
      description:
        "Starts a program on a PTY in the agent's sandbox, as the agent; attach to it with the WebSocket route. Any preset may (the key is the agent's operator). At most 16 run at once (LIMIT_EXCEEDED); a name a running terminal has is CONFLICT.",
      requestBody: jsonRequest(OpenTerminal),
      responses: {
        201: jsonResponse('The terminal, running', Terminal),
        400: jsonResponse(
          'Invalid request, a working directory outside the workspace, or too many terminals',
          ErrorBody,
        ),
        409: jsonResponse('A running terminal has that name', ErrorBody),
      },
    }),
    loadAgent(agents),
    jsonBody(OpenTerminal),
    async (c) => {
      const body = c.get('body') as v.InferOutput<typeof OpenTerminal>;
      const agent = c.get('agent');
      const terminals = terminalsOf(await agents.sandbox(agent));
      const command = body.command ?? ['bash'];
      const opened = await audit.run(
        agent,
        'terminal_open',
        {
          command,
          ...(body.cwd === undefined ? {} : { cwd: body.cwd }),
          ...(body.name === undefined ? {} : { name: body.name }),
        },
        () =>
          terminals.open({
            command,
            cols: body.cols ?? 80,
            rows: body.rows ?? 24,
            ...(body.cwd === undefined ? {} : { cwd: body.cwd }),
            ...(body.name === undefined ? {} : { name: body.name }),
          }),
        (t) => ({ terminalId: t.id }),
      );
      return c.json(terminalView(opened), 201, {
        Location: `/v1/agents/${agent.id}/terminals/${opened.id}`,
      });
    },
  );
  app.get(
    '/v1/agents/:id/terminals',
    describeRoute({
      operationId: 'listTerminals',
      tags: ['terminals'],
      description: "The agent's terminals: running ones, and the most recently ended.",
      responses: { 200: jsonResponse("The sandbox's terminals", TerminalList) },
    }),
    loadAgent(agents),
    async (c) => {
      const terminals = terminalsOf(await agents.sandbox(c.get('agent')));
      return c.json({ terminals: (await terminals.list()).map(terminalView) });
    },
  );
  app.delete(
    '/v1/agents/:id/terminals/:tid',
    describeRoute({
      operationId: 'closeTerminal',
      tags: ['terminals'],
      description:
        'Hangs the terminal up (SIGHUP, then SIGKILL) and forgets it; attached sockets close 1000.',
      parameters: [{ name: 'tid', in: 'path', required: true, schema: { type: 'string' } }],
      responses: { 204: { description: 'Closed' } },
    }),
    loadAgent(agents),
    async (c) => {
      const tid = c.req.param('tid');
      const agent = c.get('agent');
      const missing = () => new SandboxError('NOT_FOUND', `No terminal ${JSON.stringify(tid.slice(0, 80))}.`);
      if (!TERMINAL_ID.test(tid)) throw missing();
      const terminals = terminalsOf(await agents.sandbox(agent));
      if (!(await terminals.list()).some((t) => t.id === tid)) throw missing();
      await audit.run(agent, 'terminal_close', { terminalId: tid }, () => terminals.close(tid));
      return c.body(null, 204);
    },
  );
  return app;
};
