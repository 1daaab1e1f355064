import { describe, expect, it } from 'vitest';
import { confine, createResolver, relativeTo, safeRelativeName } from '../../../host/sandbox/paths.ts';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

describe('confine', () => {
  const resolve = createResolver('/workspace/');
  it('resolves relative paths against the root and normalises', () => {
    expect(resolve('a/b/../c.txt')).toBe('/workspace/a/c.txt');
    expect(resolve('')).toBe('/workspace');
    expect(resolve('.')).toBe('/workspace');
    expect(resolve('./dir/')).toBe('/workspace/dir');
    expect(resolve('/workspace//x/./y')).toBe('/workspace/x/y');
  });
  it('refuses paths that leave the workspace', () => {
    for (const p of [
      '..',
      '../x',
      'a/../../x',
      '/etc/passwd',
      '/workspace-evil/x',
      '/',
      '/workspace/../etc',
      'a\0b',
    ]) {
      expect(
        code(() => resolve(p)),
        p,
      ).toBe('PATH_OUTSIDE_WORKSPACE');
    }
    expect(code(() => resolve('a'.repeat(300)))).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(code(() => resolve('a/'.repeat(2100)))).toBe('PATH_OUTSIDE_WORKSPACE');
  });
  it('treats a root of / as everything', () => {
    expect(confine('/', '../../etc')).toBe('/etc');
  });
  it('relativeTo', () => {
    expect(relativeTo('/workspace', '/workspace')).toBe('');
    expect(relativeTo('/workspace', '/workspace/a/b')).toBe('a/b');
  });
});

describe('safeRelativeName', () => {
  it('accepts ordinary names and rejects hostile ones', () => {
    expect(safeRelativeName('./a/b/')).toBe('a/b');
    expect(safeRelativeName('.')).toBe('');
    for (const n of ['../x', '/etc/x', 'a/../../x', 'a/..', 'x\0y', `${'n'.repeat(300)}/x`]) {
      expect(safeRelativeName(n), n).toBeUndefined();
    }
  });
});
