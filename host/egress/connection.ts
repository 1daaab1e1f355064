// The sandbox's proxy tunnel at the gateway: an opaque TCP connection to an allowed host and port,
// made to the address the grant pinned (never a second resolution), whose bytes move only through
// its `join` (./tunnel.ts), charged to the tenant's budget as they pass.
// Invariants: nothing connects without a grant; the grant's lease is closed exactly once, when the
// socket closes, and the connection audited then with its bytes and its first error; at the budget
// the tunnel is cut.
import { connect as netConnect } from 'node:net';
import { SandboxError } from '../errors.ts';
import { authorize } from './admission.ts';
import type { EgressConnection, GatewayState } from './gateway-state.ts';
import { splice } from './tunnel.ts';
import type { EgressCaller, EgressTarget } from './types.ts';

export async function connect(
  s: GatewayState,
  caller: EgressCaller,
  to: EgressTarget,
  signal?: AbortSignal,
): Promise<EgressConnection> {
  const { audit } = s;
  const grant = await authorize(s, caller, { host: to.host, port: to.port });
  const started = Date.now();
  const socket = netConnect({
    host: grant.ip,
    port: grant.port,
    family: grant.family,
    ...(signal ? { signal } : {}),
  });
  let error: string | undefined;
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => {
      grant.lease.close();
      audit(caller, {
        decision: 'allow',
        host: grant.host,
        port: grant.port,
        ip: grant.ip,
        bytesIn: socket.bytesRead,
        bytesOut: socket.bytesWritten,
        durationMs: Date.now() - started,
        ...(error === undefined ? {} : { error }),
      });
      resolve();
    });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', (e) => {
      error ??= e.message;
      reject(
        new SandboxError('EGRESS_FAILED', `Could not connect to ${grant.host}:${grant.port}: ${e.message}`, {
          cause: e,
        }),
      );
    });
  });
  socket.on('error', (e) => {
    error ??= e.message;
  });
  return {
    ip: grant.ip,
    closed,
    join(client, options = {}) {
      splice(client, socket, grant.lease, {
        ...options,
        idleMs: options.idleMs ?? 0,
        onCut: () => {
          error ??= 'egress budget used up';
        },
      });
    },
    destroy: () => socket.destroy(),
  };
}
