// The client's uploads (PUT /v1/agents/:id/files and /archive, ./files.ts) in the agent's durable
// log, as every other client action on the sandbox (../audit.ts): `client.file_write` or
// `client.archive_upload` with the path and the declared size before the body is read, then
// `client.result` with what was written or the error. A middleware beside the routes, so the upload
// paths themselves stay as they are; an unknown agent is left to the route (404, nothing logged).
import type { MiddlewareHandler } from 'hono';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { AuditFacts, ClientAudit } from '../audit.ts';
import type { ApiEnv } from '../env.ts';

export const auditUploads = (
  agents: AgentService,
  audit: ClientAudit,
  action: 'file_write' | 'archive_upload',
): MiddlewareHandler<ApiEnv> =>
  async function auditUpload(c, next) {
    if (c.req.method !== 'PUT') return next();
    let agent: Agent;
    try {
      agent = await agents.get(c.get('tenant').id, c.req.param('id') ?? '');
    } catch {
      return next();
    }
    const declared = Number(c.req.header('content-length'));
    const end = await audit.begin(agent, action, {
      path: (c.req.query('path') ?? '').slice(0, 4096),
      ...(Number.isSafeInteger(declared) ? { declaredBytes: declared } : {}),
    });
    c.set('auditCallId', end.callId);
    await next();
    if (c.error !== undefined || c.res.status >= 300) {
      const error = c.error ?? new SandboxError('INTERNAL', `The upload answered HTTP ${c.res.status}.`);
      await end({ ok: false, error }).catch(() => undefined);
      return;
    }
    const answer = (await c.res
      .clone()
      .json()
      .catch(() => ({}))) as Record<string, unknown>;
    const facts: AuditFacts = {};
    for (const key of ['path', 'bytes', 'files'] as const) {
      const value = answer[key];
      if (typeof value === 'string' || typeof value === 'number') facts[key] = value;
    }
    await end({ ok: true, facts });
  };
