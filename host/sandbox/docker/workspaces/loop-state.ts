// What one loop workspace store holds (loop.ts wires it), in one object its parts (loop-mount.ts,
// loop-admission.ts, loop-spares.ts) take as their first argument: the root and the admission
// settings, the names this process made, the admission queue and the spare pools; and the names
// and paths of its workspaces.
// Invariants: every path is `<root>/<name>` or `<root>/<name>.img` for a name that matches NAME, so
// no path leaves `root`; `root` is made (mode 0700) once, before the first image.
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../../errors.ts';
import type { WorkspaceMount } from '../workspaces.ts';

export const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/;
/** Smallest workspace: ext4 needs room for its journal and metadata. */
export const MIN_WORKSPACE_BYTES = 16 * 1024 * 1024;

/** The spares kept for one name prefix (keepSpares). */
export interface Spares {
  prefix: string;
  bytes: number;
  count: number;
  onError: (e: unknown) => void;
  /** Names of formatted spare images, ready to take. */
  ready: string[];
  filling: Promise<void> | undefined;
  dropped: boolean;
}

export interface LoopState {
  root: string;
  overcommit: number;
  reserveBytes: number;
  freeBytes: (root: string) => Promise<number>;
  /** Made by this process and not removed: a sweep must not take one whose container is on its way. */
  mine: Set<string>;
  prepared: Promise<void> | undefined;
  /** Admission checks and the truncates they admit run one at a time (two creates cannot both fit). */
  admitting: Promise<unknown>;
  /**
   * Snapshot copies under way, admitted in their turn (loop-admission.ts admittedCopy): each one's
   * files and the room (as admission counts it) it takes once whole; gone once whole or failed.
   */
  copying: Set<{ temp: string; target: string; charge: number }>;
  /** Spare pools by name prefix. */
  spares: Map<string, Spares>;
}

export function paths(s: LoopState, name: string): { image: string; dir: string } {
  if (!NAME.test(name)) throw new SandboxError('INTERNAL', `bad workspace name ${JSON.stringify(name)}`);
  return { image: join(s.root, `${name}.img`), dir: join(s.root, name) };
}

/** The workspace name of a mount this store made, or undefined for anything else. */
export function nameOf(s: LoopState, mount: WorkspaceMount): string | undefined {
  if (mount.type !== 'bind' || !mount.source.startsWith(`${s.root}/`)) return undefined;
  const name = mount.source.slice(s.root.length + 1);
  return NAME.test(name) ? name : undefined;
}

export function prepare(s: LoopState): Promise<void> {
  s.prepared ??= mkdir(s.root, { recursive: true, mode: 0o700 }).then(() => chmod(s.root, 0o700));
  return s.prepared;
}
