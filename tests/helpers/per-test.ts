// What a test opens and must not outlive it (a store, a database): `closedAfterEach` wraps the
// opener so the last thing it opened in a test is closed after that test, however it ended. The
// contract suites of host/store open one instance per case this way instead of each keeping its
// own variable and afterEach. Call it inside a describe (it registers an afterEach there).
import { afterEach } from 'vitest';

/**
 * `open`, remembering what it resolved with; after each test `close` (default: its close()) runs
 * on the last of it and it is forgotten. An earlier one opened in the same test is not closed.
 */
export const closedAfterEach = <A extends unknown[], T>(
  open: (...args: A) => Promise<T>,
  close: (opened: T) => unknown = (opened) => (opened as { close(): unknown }).close(),
): ((...args: A) => Promise<T>) => {
  let opened: { value: T } | undefined;
  afterEach(async () => {
    const last = opened;
    opened = undefined;
    if (last !== undefined) await close(last.value);
  });
  return async (...args) => {
    const value = await open(...args);
    opened = { value };
    return value;
  };
};
