// Whether loop workspaces (loop.ts) can work on this machine: the service refuses to start with a
// disk limit it cannot enforce, and `npm run doctor` reports the same reason.

import { existsSync } from 'node:fs';
import { systemTool } from './system-tools.ts';

/**
 * Why loop workspaces cannot work here, or undefined when they can. `dockerHost` is the engine's
 * address (config.dockerHost, from DOCKER_HOST): a remote engine cannot see this machine's mounts.
 */
export async function loopUnavailable(
  options: { dockerHost?: string | undefined } = {},
): Promise<string | undefined> {
  if (process.platform !== 'linux') return 'loop workspaces need Linux';
  if (process.getuid?.() !== 0) return 'mounting loop workspaces needs root';
  if (!existsSync('/dev/loop-control')) return 'the kernel has no loop devices (/dev/loop-control)';
  for (const tool of ['mkfs.ext4', 'mount', 'umount']) {
    if (!(await systemTool(tool))) return `${tool} is not installed (Debian: e2fsprogs, mount)`;
  }
  const host = options.dockerHost;
  if (host && !host.startsWith('unix://'))
    return `the Docker engine at DOCKER_HOST=${host} is not on this machine, so it cannot see host mounts`;
  return undefined;
}
