// The containers' link folders on this host (channel.ts): the node's folder of them (mode 0700,
// only the node looks inside) and one per container (mode 0755: sandboxd dials as the
// agent's uid), bind-mounted read-only at config.ts LINK_MOUNT. A folder goes with its container;
// one a vanished container or a crash left behind goes at the next adopt(), once it is old enough
// that no create in flight can still be about to use it.

import { chmodSync, mkdirSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../errors.ts';
import { MAX_SOCKET_PATH } from '../sandboxd/link.ts';
import { LINK_MOUNT, LINK_SOCKET } from './config.ts';

/** A folder no container uses is removed by a sweep only once it is this old (a create may be about to). */
const SWEEP_AGE_MS = 10 * 60 * 1000;
const NAME = /^[A-Za-z0-9_-]{12}$/;

/**
 * The node's folder of link folders (made, mode 0700), or undefined when there is none or its
 * sockets' paths would be too long for a unix socket.
 */
export const linksFolder = (dir: string | undefined, onError: (e: unknown) => void): string | undefined => {
  if (dir === undefined) return undefined;
  if (Buffer.byteLength(join(dir, 'x'.repeat(12), LINK_SOCKET)) > MAX_SOCKET_PATH) {
    onError(
      new SandboxError(
        'CONFIG_INVALID',
        `The links folder ${dir} is too deep for a unix socket path; sandboxes use the attach stream.`,
      ),
    );
    return undefined;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // whatever the umask, or an older folder's mode
  return dir;
};

/** Makes `dir` (again) with mode 0755, whatever the umask. */
export const ensureLinkDir = async (dir: string): Promise<void> => {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
};

/** A new link folder in `links`. */
export const makeLinkDir = async (links: string): Promise<string> => {
  const dir = join(links, nanoid(12));
  await ensureLinkDir(dir);
  return dir;
};

/**
 * Removes the folders in `links` that none of `listed` (every managed container on the engine)
 * mounts and that are older than SWEEP_AGE_MS (`now` for tests). Resolves with how many went.
 */
export const sweepLinkDirs = async (
  links: string,
  listed: readonly Docker.ContainerInfo[],
  now = Date.now(),
): Promise<number> => {
  const used = new Set(
    listed.flatMap((c) => (c.Mounts ?? []).filter((m) => m.Destination === LINK_MOUNT).map((m) => m.Source)),
  );
  let removed = 0;
  for (const name of await readdir(links)) {
    const dir = join(links, name);
    if (!NAME.test(name) || used.has(dir)) continue;
    const info = await stat(dir).catch(() => undefined);
    if (info === undefined || !info.isDirectory() || now - info.mtimeMs < SWEEP_AGE_MS) continue;
    await rm(dir, { recursive: true, force: true });
    removed++;
  }
  return removed;
};
