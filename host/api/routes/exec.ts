// POST /v1/agents/:id/exec: the client runs one command in the agent's sandbox and gets its exit
// code and output. The command is a string run by `bash -c` (as the bash tool runs it: pipes,
// redirections and `&&` work; quote arguments yourself), as the agent's uid in its container,
// through the sandbox's own exec path (sandboxd: confined working directory, its process group
// killed at the deadline, on a client that goes away, and when the agent is deleted). It is the
// operator's action, not the model's: the agent's tool policy (allow/deny/ask, plan mode) does not
// apply, and it is recorded in the agent's durable log (../audit.ts) before it starts.
// Bounds: stdout and stderr at most EXEC_OUTPUT_BYTES each (the rest is dropped and flagged); the
// command at most `callTimeoutMs`; a command still running at its `timeoutMs` answers EXEC_TIMEOUT.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { ClientAudit } from '../audit.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';

/** stdout and stderr each keep at most this many bytes. */
export const EXEC_OUTPUT_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_ENV = 64;

const noNul = (what: string) => v.check((s: string) => !s.includes('\0'), `${what} contains a NUL byte`);

export const execRequest = (maxTimeoutMs: number) =>
  v.strictObject({
    command: v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(64 * 1024),
      noNul('command'),
      v.description('Run by `bash -c` in the sandbox, as the agent'),
    ),
    cwd: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1),
        v.maxLength(4096),
        noNul('cwd'),
        v.description('Working directory inside the workspace (default: the workspace root)'),
      ),
    ),
    env: v.optional(
      v.pipe(
        v.record(
          v.pipe(
            v.string(),
            v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment name is [A-Za-z_][A-Za-z0-9_]*'),
          ),
          v.pipe(v.string(), v.maxLength(32 * 1024), noNul('an environment value')),
        ),
        v.check((env) => Object.keys(env).length <= MAX_ENV, `at most ${MAX_ENV} environment variables`),
        v.description('Added to the environment (values are never logged)'),
      ),
    ),
    timeoutMs: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.maxValue(maxTimeoutMs),
        v.description(
          `Kill the command after this long (default ${Math.min(DEFAULT_TIMEOUT_MS, maxTimeoutMs)})`,
        ),
      ),
    ),
    stdin: v.optional(v.pipe(v.string(), v.description('Its standard input (UTF-8; never logged)'))),
  });

export const ExecAnswer = v.object({
  exitCode: v.pipe(v.nullable(v.number()), v.description('null when a signal ended it')),
  stdout: v.string(),
  stderr: v.string(),
  stdoutTruncated: v.pipe(
    v.boolean(),
    v.description(`stdout went past ${EXEC_OUTPUT_BYTES} bytes; the rest was dropped`),
  ),
  stderrTruncated: v.pipe(
    v.boolean(),
    v.description(`stderr went past ${EXEC_OUTPUT_BYTES} bytes; the rest was dropped`),
  ),
  durationMs: v.number(),
});

/** Output of one stream, kept up to EXEC_OUTPUT_BYTES. */
const collector = () => {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let cut = false;
  return {
    take(chunk: Buffer): void {
      const room = EXEC_OUTPUT_BYTES - bytes;
      if (chunk.length > room) cut = true;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      if (kept.length > 0) chunks.push(kept);
      bytes += kept.length;
    },
    /** The text, and whether it was cut (here, or by the sandbox's own cap: `sandboxCut` says it cut something). */
    done(sandboxCut: boolean) {
      return {
        text: Buffer.concat(chunks).toString('utf8'),
        // The sandbox caps each stream at its own limit (at least ours by default): a stream that
        // reached our cap when the sandbox says it cut is one of those it cut.
        truncated: cut || (sandboxCut && bytes >= EXEC_OUTPUT_BYTES),
        bytes,
      };
    },
  };
};

export const execRoutes = (agents: AgentService, audit: ClientAudit, callTimeoutMs: number): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  const Exec = execRequest(callTimeoutMs);
  app.post(
    '/v1/agents/:id/exec',
    describeRoute({
      operationId: 'execCommand',
      tags: ['sandbox'],
      description:
        "Runs one command in the agent's sandbox as the agent (`bash -c command`), outside the tool pipeline: the agent's tool policy does not apply (the key is the agent's operator) and the run is recorded in its log (`client.exec`, then `client.result`). A command still running at `timeoutMs` is killed with its process group: EXEC_TIMEOUT. A client that goes away, or the agent's deletion, kills it too.",
      requestBody: jsonRequest(Exec),
      responses: {
        200: jsonResponse('How the command ended, with its output', ExecAnswer),
        400: jsonResponse('Invalid request, or a working directory outside the workspace', ErrorBody),
        504: jsonResponse('The command ran past timeoutMs and was killed (EXEC_TIMEOUT)', ErrorBody),
      },
    }),
    loadAgent(agents),
    jsonBody(Exec),
    async (c) => {
      const body = c.get('body') as v.InferOutput<typeof Exec>;
      const agent = c.get('agent');
      const timeoutMs = body.timeoutMs ?? Math.min(DEFAULT_TIMEOUT_MS, callTimeoutMs);
      const deleted = new AbortController();
      const stopWatching = agents.onDeleted(agent, () => deleted.abort());
      try {
        const sandbox = await agents.sandbox(agent);
        const facts = {
          command: body.command,
          ...(body.cwd === undefined ? {} : { cwd: body.cwd }),
          ...(body.env === undefined ? {} : { envNames: Object.keys(body.env) }),
          ...(body.stdin === undefined ? {} : { stdinBytes: Buffer.byteLength(body.stdin) }),
          timeoutMs,
        };
        const answer = await audit.run(
          agent,
          'exec',
          facts,
          async () => {
            const out = collector();
            const err = collector();
            const gone = () =>
              new SandboxError(
                'NOT_FOUND',
                `Agent ${agent.id} was deleted while the command ran; it was killed.`,
              );
            const result = await sandbox
              .exec(body.command, {
                ...(body.cwd === undefined ? {} : { cwd: body.cwd }),
                ...(body.env === undefined ? {} : { env: body.env }),
                ...(body.stdin === undefined ? {} : { stdin: body.stdin }),
                timeoutMs,
                signal: AbortSignal.any([c.req.raw.signal, deleted.signal]),
                onStdout: out.take,
                onStderr: err.take,
              })
              .catch((error: unknown) => {
                throw deleted.signal.aborted ? gone() : error;
              });
            if (deleted.signal.aborted) throw gone();
            const stdout = out.done(result.truncated);
            const stderr = err.done(result.truncated);
            if (result.timedOut)
              throw new SandboxError(
                'EXEC_TIMEOUT',
                `The command was still running after ${timeoutMs} ms and was killed; give it a larger timeoutMs (at most ${callTimeoutMs}), or run it in a terminal.`,
                { data: { timeoutMs, stdoutBytes: stdout.bytes, stderrBytes: stderr.bytes } },
              );
            return {
              exitCode: result.exitCode,
              stdout: stdout.text,
              stderr: stderr.text,
              stdoutTruncated: stdout.truncated,
              stderrTruncated: stderr.truncated,
              durationMs: result.durationMs,
            };
          },
          (r) => ({
            exitCode: r.exitCode,
            durationMs: r.durationMs,
            stdoutBytes: Buffer.byteLength(r.stdout),
            stderrBytes: Buffer.byteLength(r.stderr),
            stdoutTruncated: r.stdoutTruncated,
            stderrTruncated: r.stderrTruncated,
          }),
        );
        return c.json(answer);
      } finally {
        stopWatching();
      }
    },
  );
  return app;
};
