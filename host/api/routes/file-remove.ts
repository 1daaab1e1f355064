// DELETE /v1/agents/:id/files?path=P: the client removes one file, symlink or empty directory of
// the workspace, or a directory with everything in it when `recursive=true`. Confined like the
// other file routes (the sandbox resolves the path: PATH_OUTSIDE_WORKSPACE for `..` or an absolute
// path elsewhere, and a symlink is removed itself, never what it points to); the workspace root
// cannot be removed (CONFLICT). Audited as `client.file_delete` (../audit.ts).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import type { ClientAudit } from '../audit.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, PathQuery } from '../schemas.ts';
import { loadAgent } from './agents.ts';

const RemoveQuery = v.object({
  ...PathQuery.entries,
  recursive: v.optional(v.picklist(['true', 'false'])),
});

export const fileRemoveRoutes = (agents: AgentService, audit: ClientAudit): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.delete(
    '/v1/agents/:id/files',
    describeRoute({
      operationId: 'removeFile',
      tags: ['files'],
      description:
        'Removes a file, a symlink (not what it points to) or an empty directory; a directory with its contents only with `recursive=true` (else DIRECTORY_NOT_EMPTY). The workspace root cannot be removed (CONFLICT).',
      parameters: [
        {
          name: 'path',
          in: 'query',
          required: true,
          schema: { type: 'string' },
          description: 'Path inside the workspace',
        },
        {
          name: 'recursive',
          in: 'query',
          schema: { type: 'string', enum: ['true', 'false'] },
          description: 'Remove a directory with everything in it. Default false.',
        },
      ],
      responses: {
        204: { description: 'Removed' },
        400: jsonResponse('A path outside the workspace, or an invalid query', ErrorBody),
        409: jsonResponse(
          'A directory that is not empty (without recursive), or the workspace root',
          ErrorBody,
        ),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const { path, recursive } = queryOf(RemoveQuery, c.req.query());
      const agent = c.get('agent');
      const sandbox = await agents.sandbox(agent);
      const all = recursive === 'true';
      await audit.run(agent, 'file_delete', { path, recursive: all }, () =>
        sandbox.fs.remove(path, { recursive: all }),
      );
      return c.body(null, 204);
    },
  );
  return app;
};
