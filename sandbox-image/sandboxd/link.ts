// The link's sandboxd side (sandbox-wire/protocol.ts LINK_VERSION): `dial` connects the unix socket
// the host listens on at SANDBOXD_LINK (a read-only bind mount of a host folder of this container's
// own) and sends the preface with the token the host gave in the call; server.ts then serves the
// socket as a second link. The token came over stdin, which nothing the agent runs can read, so a
// connection the agent makes to the same socket is refused by the host.
// Invariants: only the path sandboxd was started with is ever dialled (the host names a token,
// never a path); a dial that does not connect within `timeoutMs` fails, leaving nothing open.

import { createConnection, type Socket } from 'node:net';
import { WireError } from '../../sandbox-wire/errors.ts';
import { linkPreface } from '../../sandbox-wire/protocol.ts';

const TOKEN = /^[0-9a-f]{64}$/;

export const dialLink = (path: string | undefined, token: unknown, timeoutMs = 5000): Promise<Socket> => {
  if (!path) return Promise.reject(new WireError('TOOL_FAILED', 'This sandbox has no link socket.'));
  if (typeof token !== 'string' || !TOKEN.test(token))
    return Promise.reject(new WireError('INVALID_ARGUMENTS', 'Argument token must be 64 hex digits.'));
  return new Promise<Socket>((resolve, reject) => {
    const socket = createConnection({ path });
    const timer = setTimeout(() => fail(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(new WireError('TOOL_FAILED', `Could not dial the host's link: ${e.message}`));
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      socket.write(linkPreface(token));
      resolve(socket);
    });
  });
};
