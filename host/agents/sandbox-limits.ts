// Maps an agent's sandbox options (API units: MiB, CPUs, processes) to provider limits.
import type { SandboxLimits } from '../sandbox/types.ts';
import type { SandboxOptions } from './types.ts';

export const sandboxLimits = (options: SandboxOptions | undefined): Partial<SandboxLimits> => {
  const limits: Partial<SandboxLimits> = {};
  if (options?.memoryMb !== undefined) limits.memoryBytes = options.memoryMb * 1024 * 1024;
  if (options?.cpus !== undefined) limits.nanoCpus = Math.round(options.cpus * 1e9);
  if (options?.pids !== undefined) limits.pids = options.pids;
  return limits;
};
