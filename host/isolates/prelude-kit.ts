// What both isolate preludes run first, as source text: the run_code / workflow prelude
// (prelude.ts) and the creator-plugin prelude (host/plugins/prelude.ts) splice PRELUDE_KIT into
// their install function, so a hardening or an error-describing fix lands in both or in neither.
// It strips the globals no isolate program may have: WebAssembly, SharedArrayBuffer and Atomics
// (compilation and shared memory outside the budgets), and FinalizationRegistry, whose callbacks
// run as tasks of their own after an entry, whenever V8 collected: the one event besides the
// bridge that could resume code (run_code relies on that to end a stalled program at once,
// worker-run.ts; a plugin's CPU is metered per entry, host/isolates/cpu.ts). And it defines the
// helpers both preludes describe untrusted values and errors with: clip, text, format and
// describeError, built on intrinsics the prelude captured before any program code ran.
// Contract: the prelude defines `G` (globalThis), `stringify`, `String_`, `Error_`, `apply` and
// `slice` (String.prototype.slice) before the kit; the kit defines nothing else at the top of
// install than the names below.

/** The names the kit deletes from the isolate's global object. */
export const STRIPPED_GLOBALS = ['WebAssembly', 'SharedArrayBuffer', 'Atomics', 'FinalizationRegistry'];

export const PRELUDE_KIT = String.raw`
  for (const name of ${JSON.stringify(STRIPPED_GLOBALS)}) delete G[name];
  // The program may replace String.prototype.slice; every string the prelude cuts is cut with this.
  const clip = (s, n) => (s.length > n ? apply(slice, s, [0, n]) : s);
  const text = (v) => { try { return String_(v); } catch { return '[unprintable]'; } };
  const replacer = (_k, v) => (typeof v === 'bigint' ? text(v) + 'n' : v);
  const format = (v) => {
    if (typeof v === 'string') return v;
    if (v === undefined || typeof v === 'symbol' || typeof v === 'number' || typeof v === 'boolean') return text(v);
    if (typeof v === 'bigint') return text(v) + 'n';
    if (typeof v === 'function') return '[Function]';
    try {
      if (v instanceof Error_) return text(v.name) + ': ' + text(v.message);
      const s = stringify(v, replacer);
      return s === undefined ? text(v) : s;
    } catch { return text(v); }
  };
  // An error (or anything thrown) as plain data, every part bounded, whatever the program made of it.
  const describeError = (kind, e) => {
    let name = 'Error', message = '', stack = '';
    try {
      if (e instanceof Error_) {
        try { name = text(e.name); } catch {}
        try { message = text(e.message); } catch {}
        try { const s = e.stack; stack = typeof s === 'string' ? s : ''; } catch {}
      } else { message = 'Uncaught ' + format(e); }
    } catch { message = 'unprintable error'; }
    return { kind, name: clip(name, 200), message: clip(message, 2000), stack: clip(stack, 4000) };
  };
`;
