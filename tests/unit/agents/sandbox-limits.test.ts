// Sandbox limits asked for at agent creation are checked against the provider's maxima then,
// not at the first call.
import { describe, expect, it } from 'vitest';
import { checkLimits, sandboxLimits } from '../../../host/agents/sandbox-limits.ts';
import { DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';

const codeOf = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('sandbox limits at agent creation', () => {
  it('maps API units to provider limits', () => {
    expect(sandboxLimits({ memoryMb: 512, cpus: 1.5, pids: 256 })).toEqual({
      memoryBytes: 512 * 1024 * 1024,
      nanoCpus: 1_500_000_000,
      pids: 256,
    });
  });

  it('refuses limits above the maxima with LIMIT_EXCEEDED', () => {
    expect(codeOf(() => checkLimits(sandboxLimits({ memoryMb: 65_536 }), DOCKER_DEFAULT_MAXIMA))).toBe(
      'LIMIT_EXCEEDED',
    );
    expect(codeOf(() => checkLimits(sandboxLimits({ cpus: 64 }), DOCKER_DEFAULT_MAXIMA))).toBe(
      'LIMIT_EXCEEDED',
    );
  });

  it('accepts limits within the maxima, and anything when the provider has none', () => {
    expect(
      codeOf(() => checkLimits(sandboxLimits({ memoryMb: 1024, cpus: 1, pids: 512 }), DOCKER_DEFAULT_MAXIMA)),
    ).toBeUndefined();
    expect(codeOf(() => checkLimits(sandboxLimits({ memoryMb: 65_536 }), undefined))).toBeUndefined();
  });
});
