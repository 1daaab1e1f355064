// Files in and out of the agent's sandbox: `files?path=P` moves one file's raw bytes,
// `archive?path=P` an uncompressed tar of a directory. Paths are confined by the sandbox
// (PATH_OUTSIDE_WORKSPACE); uploads are capped (PAYLOAD_TOO_LARGE) as they stream in and are
// never held whole in memory: a file goes to the sandbox piece by piece, an archive is spooled to
// a temporary file and checked in full first (host/sandbox/tar.ts). Downloads are never held whole
// either: the body is a stream that reads the next piece from the sandbox only when the socket
// took the previous one, and stops reading when the client goes away (host/sandbox/download.ts).
// A file download is bounded by the sandbox's download limit (1 GiB), not by the model-facing
// maxReadBytes, and carries Content-Length; if the file shrinks meanwhile the connection is cut
// rather than ended short. `directory?path=P` lists one directory (sorted, at most
// DIRECTORY_LIMIT entries), so that a client can browse the workspace without a tool call.// The uploads are files-upload.ts's.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { DirectoryListing, ErrorBody, PathQuery } from '../schemas.ts';
import type { UploadSlots } from '../upload-slots.ts';
import { loadAgent } from './agents.ts';
import { BYTES, pathParam, uploadRoutes } from './files-upload.ts';

/** Entries of one directory listing at most. */
export const DIRECTORY_LIMIT = 1000;

export const fileRoutes = (
  agents: AgentService,
  maxUploadBytes: number,
  slots?: UploadSlots,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/files',
    describeRoute({
      operationId: 'readFile',
      tags: ['files'],
      parameters: [pathParam],
      responses: {
        200: { description: "The file's bytes", content: { 'application/octet-stream': { schema: BYTES } } },
      },
    }),
    loadAgent(agents),
    async (c) => {
      const { path } = queryOf(PathQuery, c.req.query());
      const sandbox = await agents.sandbox(c.get('agent'));
      const file = await sandbox.archive.downloadFile(path);
      return c.body(ReadableStream.from(file.content), 200, {
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(file.size),
      });
    },
  );
  app.get(
    '/v1/agents/:id/directory',
    describeRoute({
      operationId: 'listDirectory',
      tags: ['files'],
      description: `One directory's entries sorted by name, at most ${DIRECTORY_LIMIT} (\`truncated\` says when there are more). Use \`.\` for the workspace root.`,
      parameters: [pathParam],
      responses: {
        200: jsonResponse("The directory's entries", DirectoryListing),
        400: jsonResponse('Not a directory, or a path outside the workspace', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const { path } = queryOf(PathQuery, c.req.query());
      const sandbox = await agents.sandbox(c.get('agent'));
      const all = await sandbox.fs.list(path);
      const entries = all
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .slice(0, DIRECTORY_LIMIT)
        .map(({ name, type, size }) => ({ name, type, size }));
      return c.json({ path, entries, truncated: all.length > DIRECTORY_LIMIT });
    },
  );
  app.get(
    '/v1/agents/:id/archive',
    describeRoute({
      operationId: 'downloadArchive',
      tags: ['files'],
      parameters: [pathParam],
      responses: {
        200: { description: 'Uncompressed tar', content: { 'application/x-tar': { schema: BYTES } } },
      },
    }),
    loadAgent(agents),
    async (c) => {
      const { path } = queryOf(PathQuery, c.req.query());
      const sandbox = await agents.sandbox(c.get('agent'));
      const tar = await sandbox.archive.download(path);
      return c.body(ReadableStream.from(tar), 200, { 'Content-Type': 'application/x-tar' });
    },
  );
  app.route('/', uploadRoutes(agents, maxUploadBytes, slots));
  return app;
};
