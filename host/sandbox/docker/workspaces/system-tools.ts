// The system tools loop workspaces are made with (mkfs.ext4, mount, umount): looked up once each in
// the system's own directories, not PATH (the environment is config.ts's to read, and a
// workspace's file system is made by the system's mkfs and mount), and run by absolute path.

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';

/** Where the tools are looked up, in this order. */
const SYSTEM_BIN = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
/** Each tool's path (undefined: not installed), looked up once per process. */
const found = new Map<string, Promise<string | undefined>>();

/** The absolute path of `tool` in the system's directories, or undefined when it is not installed. */
export function systemTool(tool: string): Promise<string | undefined> {
  let path = found.get(tool);
  if (!path) {
    path = lookUp(tool);
    found.set(tool, path);
  }
  return path;
}

async function lookUp(tool: string): Promise<string | undefined> {
  for (const dir of SYSTEM_BIN) {
    const candidate = join(dir, tool);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}

/**
 * Runs a system tool by its absolute path; fails when it is not installed (the error carries what it
 * printed as `stdout` and `stderr`). `background`: at the lowest CPU priority (nice 19), for work
 * made ahead of demand that must not slow what a caller is waiting for.
 */
export async function runSystemTool(
  tool: string,
  args: string[],
  options: { background?: boolean } = {},
): Promise<{ stdout: string; stderr: string }> {
  const path = await systemTool(tool);
  if (!path) throw new Error(`${tool} is not installed in ${SYSTEM_BIN.join(', ')}`);
  return new Promise((resolve, reject) => {
    const child = execFile(path, args, (error, stdout, stderr) => {
      if (error) reject(Object.assign(error, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
    if (options.background && child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        // Gone already, or not allowed: it runs at normal priority.
      }
    }
  });
}
