// The uploads of ./files.ts: PUT `files?path=P` (one file's raw bytes) and PUT `archive?path=P`
// (an uncompressed tar extracted into a directory), with the route parameters both modules share.
// Invariants: an upload is capped (PAYLOAD_TOO_LARGE) as it streams in and never held whole in
// memory: a file goes to the sandbox piece by piece, an archive is spooled and checked in full
// first (host/sandbox/tar.ts); a failed upload's body is drained, so the client reads the answer.
// Both are checkpointed (host/agents/checkpoints/) under the call id of their audit events, so
// POST /v1/agents/:id/rollback can undo them. An upload its agent's deletion cuts short answers
// NOT_FOUND (whileLive). A tenant spools at most its share of archive uploads at once
// (../upload-slots.ts: RATE_LIMITED before the body is read).
import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import { jsonResponse, queryOf, uploadBody } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ArchiveUploaded, PathQuery, Uploaded } from '../schemas.ts';
import type { UploadSlots } from '../upload-slots.ts';
import { loadAgent } from './agents.ts';

/** A raw byte body (OpenAPI 3.1: a string of any bytes; generators type it as binary). */
export const BYTES = { type: 'string' as const, format: 'binary' };

export const pathParam = {
  name: 'path',
  in: 'query' as const,
  required: true,
  schema: { type: 'string' as const },
  description: 'Path inside the workspace',
};

/**
 * Runs an upload of `agent`; one its deletion cut short answers NOT_FOUND, as the agent now does,
 * not the SANDBOX_UNAVAILABLE of the sandbox removed under it (a 503 clients retry).
 */
async function whileLive<T>(agents: AgentService, agent: Agent, run: () => Promise<T>): Promise<T> {
  let deleted = false;
  const stopWatching = agents.onDeleted(agent, () => {
    deleted = true;
  });
  try {
    return await run();
  } catch (error) {
    if (!deleted) throw error;
    throw new SandboxError('NOT_FOUND', `Agent ${agent.id} was deleted during the upload.`, {
      data: { agentId: agent.id },
      cause: error,
    });
  } finally {
    stopWatching();
  }
}

/** PUT /v1/agents/:id/files and /v1/agents/:id/archive, each at most maxUploadBytes. */
export const uploadRoutes = (
  agents: AgentService,
  maxUploadBytes: number,
  slots?: UploadSlots,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.put(
    '/v1/agents/:id/files',
    describeRoute({
      operationId: 'writeFile',
      tags: ['files'],
      parameters: [pathParam],
      requestBody: {
        required: true,
        description: `The file's new content, raw (at most ${maxUploadBytes} bytes); it replaces the file only once all of it arrived.`,
        content: { 'application/octet-stream': { schema: BYTES } },
      },
      responses: { 200: jsonResponse('Written: the confined path and the bytes written', Uploaded) },
    }),
    loadAgent(agents),
    async (c) => {
      const { path } = queryOf(PathQuery, c.req.query());
      const body = uploadBody(c.req.raw, maxUploadBytes);
      const agent = c.get('agent');
      try {
        const written = await whileLive(agents, agent, async () => {
          const sandbox = await agents.sandbox(agent);
          const upload = () => sandbox.archive.uploadFile(path, body, { maxBytes: maxUploadBytes });
          const checkpoints = agents.checkpoints(agent);
          const callId = c.get('auditCallId');
          if (checkpoints === undefined || callId === undefined) return upload();
          return checkpoints.track({ callId, tool: 'file_upload', paths: [path] }, upload);
        });
        return c.json(written);
      } catch (error) {
        await body.drain();
        throw error;
      }
    },
  );
  app.put(
    '/v1/agents/:id/archive',
    describeRoute({
      operationId: 'uploadArchive',
      tags: ['files'],
      parameters: [pathParam],
      requestBody: {
        required: true,
        description: `An uncompressed tar of files and directories (at most ${maxUploadBytes} bytes of content), extracted into \`path\` once all of it was checked.`,
        content: { 'application/x-tar': { schema: BYTES } },
      },
      responses: { 200: jsonResponse('Extracted: how many files and bytes', ArchiveUploaded) },
    }),
    loadAgent(agents),
    async (c) => {
      const { path } = queryOf(PathQuery, c.req.query());
      if (c.req.raw.body === null) throw new SandboxError('BAD_REQUEST', 'Send the tar as the request body.');
      // Before the body is read: a refused upload takes no room in the spool (../upload-slots.ts).
      const release = slots?.take(c.get('tenant').id);
      const body = uploadBody(c.req.raw, maxUploadBytes);
      const agent = c.get('agent');
      try {
        const extracted = await whileLive(agents, agent, async () => {
          const sandbox = await agents.sandbox(agent);
          const tar = Readable.from(body, { objectMode: false });
          // Checkpointed once checked in full: its files' pre-images are kept before any is written.
          const checkpoints = agents.checkpoints(agent);
          const callId = c.get('auditCallId');
          let end: (() => Promise<void>) | undefined;
          const beforeWrite =
            checkpoints === undefined || callId === undefined
              ? undefined
              : async (files: string[]) => {
                  end = await checkpoints.begin(sandbox, { callId, tool: 'archive_upload', paths: files });
                };
          try {
            return await sandbox.archive.upload(path, tar, {
              maxBytes: maxUploadBytes,
              ...(beforeWrite === undefined ? {} : { beforeWrite }),
            });
          } finally {
            await end?.();
          }
        });
        return c.json(extracted);
      } catch (error) {
        await body.drain();
        throw error;
      } finally {
        release?.();
      }
    },
  );
  return app;
};
