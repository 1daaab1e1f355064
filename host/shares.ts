// How a whole that every tenant shares is kept open to newcomers (round 5 of the adversarial pass):
// a part of it stays for owners that hold none, so that several owners each within its own share
// cannot lock out one that holds nothing yet (archive upload slots, isolate run slots, workspace
// disk).

/** What a whole of `total` keeps for owners that hold none of it: a quarter, at least one where there are two. */
export const reserveFor = (total: number): number => (total > 1 ? Math.max(1, Math.floor(total / 4)) : 0);

/** Whether an owner that holds some of a whole of `total`, `open` of it free, may take `more`: the reserve stays free. */
export const leavesReserve = (open: number, total: number, more: number): boolean =>
  open - more >= reserveFor(total);
