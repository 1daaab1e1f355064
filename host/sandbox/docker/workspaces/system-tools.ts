// The system tools loop workspaces are made with (mkfs.ext4, mount, umount): looked up once each in
// the system's own directories, not PATH (the environment is config.ts's to read, and a
// workspace's file system is made by the system's mkfs and mount), and run by absolute path.

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

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

/** Runs a system tool by its absolute path; fails when it is not installed. */
export async function runSystemTool(
  tool: string,
  args: string[],
): Promise<{ stdout: string; stderr: string }> {
  const path = await systemTool(tool);
  if (!path) throw new Error(`${tool} is not installed in ${SYSTEM_BIN.join(', ')}`);
  return exec(path, args);
}
