// The receiving side of forwarding: a request that carries any forwarding header (./sign.ts) is
// either signed by a replica holding the replica key, within the clock window, or refused 401
// FORWARD_UNVERIFIED before anything else looks at it. A verified one is marked (`forwardedBy`, so
// the router never forwards it again: ./route.ts) and counts as coming from the client the
// forwarder names (the key-failure throttle and the audit: ../client-address.ts). It must run
// before anything reads the client's address.
import type { MiddlewareHandler } from 'hono';
import { SandboxError } from '../../errors.ts';
import { nameForwardedClient } from '../client-address.ts';
import type { ApiEnv } from '../env.ts';
import { verifyForward } from './sign.ts';

export interface VerifyForwardedOptions {
  /** replicaKey(secretsKey) (./sign.ts). */
  key: Buffer;
  now?: () => number;
}

export const verifyForwarded = (options: VerifyForwardedOptions): MiddlewareHandler<ApiEnv> => {
  const now = options.now ?? Date.now;
  return async function verifyForwarded(c, next) {
    const verdict = verifyForward(options.key, (name) => c.req.header(name), c.req.method, c.req.url, now());
    if (verdict.kind === 'refused')
      throw new SandboxError(
        'FORWARD_UNVERIFIED',
        `Forwarding headers (x-dsh-*) are set only by replicas of this service, signed: ${verdict.reason}.`,
      );
    if (verdict.kind === 'forwarded') {
      c.set('forwardedBy', verdict.replicaId);
      nameForwardedClient(c.env, verdict.client);
    }
    await next();
  };
};
