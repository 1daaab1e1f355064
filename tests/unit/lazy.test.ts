// lazyRequire (host/lazy.ts): a package loaded at its first use, once, synchronously; one that
// cannot load fails every use, not only the first.
import { expect, it } from 'vitest';
import { lazyRequire } from '../../host/lazy.ts';

it('requires at the first call and returns the same exports after', () => {
  const yaml = lazyRequire<typeof import('yaml')>('yaml');
  const first = yaml();
  expect(first.parse('a: 1')).toEqual({ a: 1 });
  expect(yaml()).toBe(first);
});

it('a package that cannot load throws at every use', () => {
  const missing = lazyRequire('dsh-no-such-package');
  expect(() => missing()).toThrow(/dsh-no-such-package/);
  expect(() => missing()).toThrow(/dsh-no-such-package/);
});
