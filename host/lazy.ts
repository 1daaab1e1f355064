// Packages the service may never use, loaded at their first use rather than with the service: a
// warm start imports ~900 modules and pays for each. require() rather than import() so that a
// synchronous caller (a parser, a connection's constructor) can load on demand too; Node's module
// cache makes it one load per process, and a package that fails to load throws at every use.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A function returning `specifier`'s exports (a CommonJS package), required at its first call. */
export const lazyRequire = <T>(specifier: string): (() => T) => {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(specifier) as T;
    return loaded;
  };
};
