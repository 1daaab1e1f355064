// The Hono environment of the API: what middleware puts on the context for the handlers.
import type { RequestIdVariables } from 'hono/request-id';
import type { Agent } from '../agents/types.ts';
import type { Tenant } from '../store/index.ts';
import type { KeyAttempts } from './auth-throttle.ts';

export interface ApiEnv {
  Variables: RequestIdVariables & {
    /** The caller's tenant (set by auth). */
    tenant: Tenant;
    /** Whether the request's key is still accepted now (set by tenant auth; ./key-watch.ts). */
    keyLive: (() => Promise<boolean>) | undefined;
    /** The addressed agent, already checked to belong to `tenant` (set by the agent loader). */
    agent: Agent;
    /** The validated JSON body (set by jsonBody). */
    body: unknown;
    /** Gives the request's tenant slot back early (set by tenantConcurrency): a stream that turns out long-lived. */
    releaseSlot: () => void;
    /** Counts an open SSE stream of `kind` in /metrics until the returned function is called (set by the app). */
    openStream: (kind: string) => () => void;
    /** Output flowing to the client: each SSE event calls it (set by the app when AppDeps.activity is given). */
    activity: (() => void) | undefined;
    /** The key-failure throttle for this request's source (set by the app; ./auth-throttle.ts). */
    keyAttempts: KeyAttempts;
    /** The replica that forwarded this request, its signature checked (./forward/verify.ts); unset when direct. */
    forwardedBy: string | undefined;
    /** The call id of the client action being audited (set by ./routes/upload-audit.ts; an upload's checkpoint). */
    auditCallId: string | undefined;
  };
}
