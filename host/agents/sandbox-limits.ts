// Maps an agent's sandbox options (API units: MiB, CPUs, processes, MiB of disk) to provider limits.
import { SandboxError } from '../errors.ts';
import type { SandboxLimits } from '../sandbox/types.ts';
import type { SandboxOptions } from './types.ts';

export const sandboxLimits = (options: SandboxOptions | undefined): Partial<SandboxLimits> => {
  const limits: Partial<SandboxLimits> = {};
  if (options?.memoryMb !== undefined) limits.memoryBytes = options.memoryMb * 1024 * 1024;
  if (options?.cpus !== undefined) limits.nanoCpus = Math.round(options.cpus * 1e9);
  if (options?.pids !== undefined) limits.pids = options.pids;
  if (options?.diskMb !== undefined) limits.diskBytes = options.diskMb * 1024 * 1024;
  return limits;
};

/** Refuses, at agent creation, limits the sandbox provider would refuse at the first call. */
export const checkLimits = (limits: Partial<SandboxLimits>, maxima: SandboxLimits | undefined): void => {
  if (maxima === undefined) return;
  const over = (Object.keys(limits) as Array<keyof SandboxLimits>).filter(
    (key) => (limits[key] ?? 0) > (maxima[key] ?? Number.POSITIVE_INFINITY),
  );
  if (over.length > 0) {
    const shown = over.map((key) => `${key} ${limits[key]} > ${maxima[key]}`).join(', ');
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `The sandbox limits exceed this service's maxima (${shown}); ask for less.`,
      {
        data: { over },
      },
    );
  }
};
