import { describe, expect, it } from 'vitest';
import { httpStatusOf, SandboxError } from '../../../host/errors.ts';
import { confine, createResolver, relativeTo, safeRelativeName } from '../../../host/sandbox/paths.ts';

const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
};
const code = (fn: () => unknown): string | undefined => (thrown(fn) as { code?: string } | undefined)?.code;

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
  it("fails with the service's own error, so the API answers 400 (and a bad root is CONFIG_INVALID)", () => {
    const outside = thrown(() => resolve('../etc/passwd'));
    expect(outside).toBeInstanceOf(SandboxError);
    expect(outside).toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
      message:
        'Path "../etc/passwd" is outside the workspace /workspace (leaves the workspace); use a path inside /workspace.',
      data: { path: '../etc/passwd', root: '/workspace' },
    });
    expect(httpStatusOf((outside as SandboxError).code)).toBe(400);
    const root = thrown(() => createResolver('workspace'));
    expect(root).toBeInstanceOf(SandboxError);
    expect(root).toMatchObject({
      code: 'CONFIG_INVALID',
      message: 'Sandbox root must be an absolute POSIX path, got "workspace".',
    });
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
