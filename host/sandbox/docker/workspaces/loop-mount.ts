// A loop workspace's file system: formatted (ext4, owned by the agent user), loop-mounted
// (nosuid, nodev, noatime, discard) on its mount point, unmounted, and removed with its image.
// Invariants: a mount point is root-owned mode 0000 before it is mounted, so a container started
// while its workspace is not mounted sees an unusable directory instead of the host's disk;
// nothing here reads or writes a path inside a mounted workspace; mounting an already mounted
// workspace and unmounting an unmounted one do nothing, so two starts may race.
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, rmdir } from 'node:fs/promises';
import { SandboxError } from '../../../errors.ts';
import { type LoopState, paths } from './loop-state.ts';
import { runSystemTool } from './system-tools.ts';

/** The agent user inside the image (Dockerfile.sandbox). */
const AGENT_UID = 1000;

/** Mount points currently mounted under `root` (from /proc/self/mountinfo; octal escapes decoded). */
export async function mountedUnder(root: string): Promise<Set<string>> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const target = line.split(' ')[4];
    if (!target) continue;
    const path = target.replace(/\\([0-7]{3})/g, (_, o: string) =>
      String.fromCharCode(Number.parseInt(o, 8)),
    );
    if (path.startsWith(`${root}/`)) out.add(path);
  }
  return out;
}

/** A failed system tool as SANDBOX_UNAVAILABLE, quoting what it printed. */
export function failed(what: string, error: unknown, data: Record<string, unknown>): SandboxError {
  const stderr = String((error as { stderr?: unknown }).stderr ?? (error as Error).message ?? error).trim();
  return new SandboxError('SANDBOX_UNAVAILABLE', `${what} failed: ${stderr.slice(0, 300)}`, {
    data,
    cause: error,
  });
}

export async function format(image: string, background = false): Promise<void> {
  await runSystemTool(
    'mkfs.ext4',
    [
      '-q',
      '-F',
      '-m',
      '0',
      '-i',
      '8192',
      '-L',
      'workspace',
      '-E',
      `lazy_itable_init=1,lazy_journal_init=1,root_owner=${AGENT_UID}:${AGENT_UID}`,
      image,
    ],
    { background },
  );
}

export async function mountOne(s: LoopState, name: string): Promise<void> {
  const { image, dir } = paths(s, name);
  if ((await mountedUnder(s.root)).has(dir)) return;
  if (!existsSync(image))
    throw new SandboxError('SANDBOX_UNAVAILABLE', `The workspace ${name} is gone (no ${image}).`, {
      data: { name },
    });
  await mkdir(dir, { recursive: true, mode: 0o000 });
  await chmod(dir, 0o000);
  try {
    await runSystemTool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime,discard', image, dir]);
  } catch (e) {
    // Two starts raced: the other one mounted it.
    if ((await mountedUnder(s.root)).has(dir)) return;
    throw failed('Mounting the workspace', e, { name });
  }
}

async function unmountOne(s: LoopState, name: string): Promise<void> {
  const { dir } = paths(s, name);
  if (!(await mountedUnder(s.root)).has(dir)) return;
  try {
    await runSystemTool('umount', [dir]);
  } catch (e) {
    // Still busy (a container that is being removed): detach now, freed when the last user goes.
    try {
      await runSystemTool('umount', ['--lazy', dir]);
    } catch {
      throw failed('Unmounting the workspace', e, { name });
    }
  }
}

/** Unmounts and deletes a workspace or spare (mount point and image), and forgets it. */
export async function removeOne(s: LoopState, name: string): Promise<void> {
  const { image, dir } = paths(s, name);
  s.mine.delete(name);
  for (const pool of s.spares.values()) {
    const at = pool.ready.indexOf(name);
    if (at >= 0) pool.ready.splice(at, 1);
  }
  await unmountOne(s, name);
  await rmdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
  await rm(image, { force: true });
}
