// A connect deadline that a blocked event loop does not turn into a false failure. After a long
// block (a starved or busy process), Node runs due timers before it polls for I/O, so a plain
// setTimeout fires before the 'connect' that completed during the block is seen, and an owner
// that answered at once counts as unreachable. Here the deadline's callback waits one more turn
// (setImmediate runs after the poll phase): a connection made in time is seen first and cancels it.
// Invariant: `fire` runs at most once, never after cancel().

/** Calls `fire` once `ms` have passed and the I/O that came in meanwhile was seen; cancel() stops it. */
export function connectDeadline(ms: number, fire: () => void): { cancel(): void } {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(fire);
  }, ms);
  return {
    cancel() {
      clearTimeout(timer);
      if (immediate !== undefined) clearImmediate(immediate);
    },
  };
}
