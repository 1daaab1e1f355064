// The embedded node's pipes to a container's sandboxd (nodes/types.ts SandboxdChannel): attach
// (before start when the container is not running, so no byte sandboxd writes is lost), start, and
// hand over the demuxed stdio; when the container has a link folder, the channel can also listen
// on its socket for sandboxd's dial (sandboxd/link.ts checks the token's preface) and hand over the
// socket. The node reads nothing else: the control plane's sandboxd client speaks over both.
// Invariants: closing a channel detaches only (the container and its stdin stay); a link folder is
// used only when it lies in the node's folder of link folders (so links off, or moved, means no
// link for older containers too); a folder that went away is made again before a start (Docker
// needs the bind's source).

import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import type Docker from 'dockerode';
import type { LinkOffer, SandboxdChannel, SandboxdPipe } from '../nodes/types.ts';
import { listenLink } from '../sandboxd/link.ts';
import { attach } from './attach.ts';
import { LINK_SOCKET, linkDirOf } from './config.ts';
import { fromDocker, isNotModified } from './errors.ts';
import { ensureLinkDir } from './links.ts';

export interface ChannelOptions {
  /** The container was just created and never started: nothing is asked of the engine before attaching. */
  created?: boolean;
  /** The container's link folder (config.ts); default: read from its inspect (none when `created`). */
  link?: string;
  /** The node's folder of link folders; undefined: no link. */
  links?: string;
}

/** SIGKILL the container (a stopped sandboxd included) and wait until it has stopped. */
export const stopNow = async (container: Docker.Container): Promise<void> => {
  try {
    await container.stop({ t: 0 });
  } catch (e) {
    if (!isNotModified(e)) throw fromDocker(e, 'Restarting the sandbox', { container: container.id });
  }
};

/** A link socket, as a pipe. */
export const socketPipe = (socket: Socket): SandboxdPipe => {
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
  });
  return { input: socket, output: socket, closed, close: () => socket.destroy() };
};

/** Listens in `dir` for sandboxd's dial (sandboxd/link.ts). */
export const offerLink = async (dir: string): Promise<LinkOffer> => {
  const listener = await listenLink(join(dir, LINK_SOCKET));
  return { token: listener.token, accepted: listener.accepted.then(socketPipe), close: listener.close };
};

/** Attach, start if needed, and the channel (see the header). Fails with the engine's error, translated. */
export const openChannel = async (
  container: Docker.Container,
  options: ChannelOptions = {},
): Promise<SandboxdChannel> => {
  let running = false;
  let link = options.link;
  if (!options.created) {
    try {
      const info = await container.inspect();
      running = info.State.Running;
      // Frozen by a pause (pause.ts), maybe before this process started: thawed, its processes
      // kept. Opening is how a paused sandbox resumes, on this node or through a remote one.
      if (info.State.Paused)
        await container.unpause().catch((e: unknown) => {
          if (!isNotModified(e)) throw e;
        });
      const found = linkDirOf(info);
      if (
        link === undefined &&
        found !== undefined &&
        options.links !== undefined &&
        dirname(found) === options.links
      )
        link = found;
    } catch (e) {
      throw fromDocker(e, 'Inspecting the sandbox', { container: container.id });
    }
  }
  if (link !== undefined && !running) await ensureLinkDir(link);
  const attachment = await attach(container);
  if (!running) {
    try {
      await container.start();
    } catch (e) {
      if (!isNotModified(e)) {
        attachment.close();
        throw fromDocker(e, 'Starting the sandbox', { container: container.id });
      }
    }
  }
  const dir = link;
  return {
    input: attachment.stdout,
    output: attachment.stdin,
    closed: attachment.closed,
    close: attachment.close,
    ...(dir === undefined ? {} : { link: () => offerLink(dir) }),
  };
};
