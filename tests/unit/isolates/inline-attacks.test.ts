// Hostile programs against inline entries (worker-run.ts): a run alone on one of two workers enters
// its isolate on the worker's own thread, and its calls and console lines leave through synchronous
// Callbacks. Each test checks what a user would notice: the run ends the way its limits say, nothing
// of the worker reaches the program or the outcome, and the worker goes on serving the next run.
// The block at the end holds the problems this suite found, now fixed (see the comment on each);
// everything is a regression test. Limits are small so the file stays cheap on a shared 2-core machine.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IsolateHost, IsolateHostEvent, JsonValue, RunOutcome } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import type { RunInput } from './helpers.ts';
import { cpuTimeoutMessage, failure, runner, sleep, startHost, value } from './helpers.ts';

const limits = { cpuMs: 300, wallMs: 1_500, memoryMb: 32 };
const killGraceMs = 500;
const CPU_TIMEOUT = { kind: 'timeout', message: expect.stringMatching(cpuTimeoutMessage(limits.cpuMs)) };
/** Anything that names the worker's files or runtime (the `<isolated-vm boundary>` frame marker aside). */
const HOST_PATHS = /\/work\/|node_modules|node:|file:\/\/|worker-run|worker\.ts|outbox|supervisor/;

let host: IsolateHost;
const events: IsolateHostEvent[] = [];
/** Workers killed or exited: a killed one is listed by workerPids() until its exit is seen. */
const gone = new Set<number>();
const run = runner(() => host);

beforeAll(async () => {
  host = await startHost({
    workers: 2,
    limits,
    killGraceMs,
    onEvent: (event) => {
      events.push(event);
      if (event.type === 'worker_exited' || event.type === 'worker_killed') gone.add(event.pid);
    },
  });
  await bothWorkersServe(); // both workers up before the first test
});
afterAll(() => host.close());

// Inline needs another worker open to everybody: wait until both are up (a test below kills one).
beforeEach(async () => {
  await until(
    () => {
      const pids = host.workerPids();
      return pids.length === 2 && pids.every((pid) => !gone.has(pid));
    },
    { what: 'both workers up' },
  );
});

/** A lone run, which must have gone inline (the tests below rely on it). */
const inline = async (input: RunInput): Promise<RunOutcome> => {
  const outcome = await run(input);
  expect(outcome.stats.inline).toBe(true);
  return outcome;
};

/** Runs `body` and checks that no worker was killed, exited or replaced meanwhile. */
const sameWorkers = async <T>(body: () => Promise<T>): Promise<T> => {
  const before = [...host.workerPids()].sort();
  const mark = events.length;
  const result = await body();
  expect(events.slice(mark).map((e) => e.type)).not.toContain('worker_killed');
  expect(events.slice(mark).map((e) => e.type)).not.toContain('worker_exited');
  expect([...host.workerPids()].sort()).toEqual(before);
  return result;
};

/**
 * Both workers take a run with a tool call at once: the first run dispatched gets one worker to
 * itself (inline) and cannot finish before the second has made its call too, so the second must be
 * served by the other worker (queued). Neither is stuck, wedged or still dedicated to an earlier run.
 * (Same code, so both compile in the same tick.)
 */
const bothWorkersServe = async (): Promise<void> => {
  let arrived = 0;
  let release = (): void => undefined;
  const both = new Promise<void>((resolve) => (release = resolve));
  const outcomes = await Promise.all(
    [1, 2].map((n) =>
      run({
        code: 'return (await tools.echo({ n })).args.n',
        globals: { n },
        onCall: async (name, args) => {
          if (++arrived === 2) release();
          await both;
          return { name, args };
        },
      }),
    ),
  );
  expect(outcomes.map(value)).toEqual([1, 2]);
  expect(outcomes.map((o) => o.stats.inline).sort()).toEqual([false, true]);
};

describe('an inline entry keeps to the run budget', () => {
  it('a spin after a call ends at the CPU budget, and the same worker takes the next run', async () => {
    await sameWorkers(async () => {
      expect(failure(await inline({ code: 'await tools.echo({}); for (;;) {}' }))).toEqual(CPU_TIMEOUT);
      await bothWorkersServe();
    });
  });

  it('a spin after a slow call ends at the wall-clock deadline, with the wall-clock message', async () => {
    await sameWorkers(async () => {
      const outcome = await inline({
        code: 'await tools.echo({}); for (;;) {}',
        limits: { cpuMs: 5_000, wallMs: 700 },
        onCall: async (name, args) => {
          await sleep(400);
          return { name, args };
        },
      });
      expect(failure(outcome)).toEqual({ kind: 'timeout', message: 'the program ran longer than 700 ms' });
      await bothWorkersServe();
    });
  });

  it('computing around the budget over several entries: under it completes, over it times out', async () => {
    const spin = (ms: number, rounds: number) =>
      `for (let i = 0; i < ${rounds}; i++) { await tools.echo({ i }); const t = Date.now(); while (Date.now() - t < ${ms}) {} } return 'done'`;
    await sameWorkers(async () => {
      // A long wall-clock limit: on a loaded machine 300 ms of CPU can take longer than 1.5 s of wall
      // time, and it is the CPU budget these runs are about.
      const slow = { ...limits, wallMs: 30_000 };
      expect(value(await inline({ code: spin(40, 3), limits: slow }))).toBe('done');
      const over = await inline({ code: spin(60, 20), limits: slow });
      expect(failure(over)).toEqual(CPU_TIMEOUT);
      expect(over.stats.calls).toBeLessThan(20);
      await bothWorkersServe();
    });
  });

  it('a program that can never finish gives its worker back at once, not at the deadline', async () => {
    await sameWorkers(async () => {
      // Before stalled runs were detected, this one held its dedicated worker until the deadline.
      const outcome = await inline({
        code: 'await tools.echo({}); await new Promise(() => {})',
        limits: { wallMs: 600_000 },
      });
      expect(failure(outcome).kind).toBe('stalled');
      // Released: with a worker still dedicated, the second of two runs would wait for it.
      await bothWorkersServe();
    });
  });
});

describe('calls and console lines leave from inside an entry at once', () => {
  it('Promise.all of 200 calls in one entry settles each with its own result', async () => {
    const outcome = await inline({
      code: 'const rs = await Promise.all(Array.from({ length: 200 }, (_, i) => tools.echo({ i }))); return rs.reduce((s, r) => s + r.args.i, 0)',
      limits: { cpuMs: 2_000 },
    });
    expect(value(outcome)).toBe(19_900);
    expect(outcome.stats.calls).toBe(200);
    expect(outcome.stats.maxInFlight).toBeGreaterThan(1);
  });

  it('calls made from microtasks and later entries fan out and come back right', async () => {
    const outcome = await inline({
      code: `
        const walk = async (d) => {
          if (d === 0) return 1;
          const pair = [tools.echo({ d }), tools.echo({ d })].map((p) => p.then((r) => walk(r.args.d - 1)));
          const [a, b] = await Promise.all(pair);
          return a + b;
        };
        console.log('start');
        return walk(5);`,
      limits: { cpuMs: 2_000 },
    });
    expect(value(outcome)).toBe(32);
    expect(outcome.stats.calls).toBe(62);
    expect(outcome.logs).toEqual(['start']);
  });

  it('calls still running when the program returns change neither its outcome nor the next run', async () => {
    await sameWorkers(async () => {
      const outcome = await inline({
        code: "tools.echo({}).then(() => tools.echo({ late: 1 })); console.log('x'); return 'early'",
      });
      expect(value(outcome)).toBe('early');
      expect(outcome.logs).toEqual(['x']);
      await bothWorkersServe();
    });
  });

  it('a toJSON that logs while the prelude serialises a call’s arguments', async () => {
    const received: JsonValue[] = [];
    const outcome = await inline({
      code: `
        const arg = { toJSON() { console.log('inside'); return { outer: 1 }; } };
        const outer = await tools.echo(arg);
        return outer.args;`,
      onCall: async (name, args) => {
        received.push(args);
        return { name, args };
      },
    });
    expect(value(outcome)).toEqual({ outer: 1 });
    expect(outcome.logs).toEqual(['inside']);
    expect(received).toEqual([{ outer: 1 }]);
  });

  it('hitting the call limit inside an entry ends the run as limit, whatever the program does next', async () => {
    let calls = 0;
    await sameWorkers(async () => {
      const outcome = await inline({
        code: `
          await tools.echo({});
          try { for (let i = 0; i < 100; i++) tools.echo({ i }); } catch (e) { try { console.log('caught ' + e.message); } catch {} }
          for (let i = 0; i < 50; i++) {
            tools.echo({ again: i }).catch(() => {});
            try { console.log('more ' + i); } catch {}
          }
          return 'ignored';`,
        limits: { maxCalls: 10 },
        onCall: async (name, args) => {
          calls++;
          return { name, args };
        },
      });
      expect(failure(outcome)).toEqual({ kind: 'limit', message: 'more than 10 tool calls in one run' });
      expect(calls).toBeLessThanOrEqual(10);
      expect(outcome.logs).toEqual([]);
      await bothWorkersServe();
    });
  });

  // Program code that the prelude runs while building a call or a console line runs in the isolate,
  // under the entry's deadline, never in the worker.
  it.each([
    ['toJSON of a logged value', 'console.log({ toJSON() { for (;;) {} } })'],
    [
      'Symbol.toPrimitive of a logged error name',
      "const e = new Error('x'); e.name = { [Symbol.toPrimitive]() { for (;;) {} } }; console.log(e)",
    ],
    ['a getter in call arguments', 'await tools.echo({ get x() { for (;;) {} } })'],
  ])('a spin in %s ends at the CPU budget', async (_label, attack) => {
    let calls = 0;
    await sameWorkers(async () => {
      const outcome = await inline({
        code: `await tools.echo({}); ${attack}`,
        limits: { maxOutputBytes: 50 },
        onCall: async (name, args) => {
          calls++;
          return { name, args };
        },
      });
      expect(failure(outcome)).toEqual(CPU_TIMEOUT);
      expect(calls).toBe(1);
    });
  });
});

describe('the program reaches nothing of the worker from inside an entry', () => {
  it('replacing Reflect.apply, call/apply, the array iterator, JSON and defineProperty changes only the program', async () => {
    const received: JsonValue[] = [];
    const outcome = await inline({
      code: `
        const tamper = () => {
          Reflect.apply = () => { throw new Error('Reflect.apply'); };
          Function.prototype.call = function () { throw new Error('call'); };
          Function.prototype.apply = function () { throw new Error('apply'); };
          Array.prototype[Symbol.iterator] = function () { throw new Error('iterator'); };
          JSON.stringify = () => '{"forged":true}';
          JSON.parse = () => ({ forged: true });
          Object.defineProperty = () => { throw new Error('defineProperty'); };
        };
        tamper(); // before the first await: the prelude's run() has not attached its outcome callback yet
        const a = await tools.echo({ a: 1 });
        console.log({ line: 1 });
        tamper(); // and again between entries
        const b = await tools.echo({ b: 2 });
        return { a: a.args.a, b: b.args.b };`,
      onCall: async (name, args) => {
        received.push(args);
        return { name, args };
      },
    });
    expect(value(outcome)).toEqual({ a: 1, b: 2 });
    expect(outcome.logs).toEqual(['{"line":1}']);
    expect(received).toEqual([{ a: 1 }, { b: 2 }]);
  });

  // A replaced then() sees the resolving functions of the program's own promises (returning a
  // promise from an async function goes through it), never the prelude's outcome callback: feeding
  // everything it captured a forged outcome string can only change the program's own return value.
  it('a Promise.prototype.then that captures callbacks cannot forge the outcome', async () => {
    const outcome = await inline({
      code: `
        const realThen = Promise.prototype.then;
        const callThen = Function.prototype.call.bind(realThen);
        const captured = [];
        Promise.prototype.then = function (f, r) { captured.push(f, r); return callThen(this, f, r); };
        await tools.echo({});
        const forged = ['V{"forged":1}', 'E{"kind":"limit","name":"x","message":"forged","stack":""}'];
        for (const fn of captured) for (const text of forged) { try { if (typeof fn === 'function') fn(text); } catch {} }
        await tools.echo({});
        for (const fn of captured) for (const text of forged) { try { if (typeof fn === 'function') fn(text); } catch {} }
        return 'real';`,
    });
    // Either its own value, or one of the strings it resolved its own promise with: never the forgery.
    expect(outcome.ok).toBe(true);
    expect(['real', 'V{"forged":1}', 'E{"kind":"limit","name":"x","message":"forged","stack":""}']).toContain(
      value(outcome),
    );
  });

  it('a Promise species the prelude’s then() constructs gets nothing of the worker', async () => {
    const outcome = await inline({
      code: `
        const got = [];
        const C = function () {};
        C[Symbol.species] = function (executor) { got.push(typeof executor, executor.length); return Reflect.construct(Promise, [executor]); };
        Object.defineProperty(Promise.prototype, 'constructor', { value: C, configurable: true });
        await tools.echo({});
        return got.slice(0, 2);`,
    });
    expect(value(outcome)).toEqual(['function', 2]);
  });

  it('prelude frames give away no function or receiver while the prelude runs program code', async () => {
    const outcome = await inline({
      code: `
        const probe = () => {
          const saved = Error.prepareStackTrace;
          Error.prepareStackTrace = (_e, sites) => sites.map((s) => [String(s.getFileName()), typeof s.getFunction(), typeof s.getThis()]);
          const sites = new Error().stack;
          Error.prepareStackTrace = saved;
          return sites;
        };
        const found = {};
        await tools.echo({ toJSON: function tj() { found.call = probe(); found.callCaller = tj.caller; return 1; } });
        console.log({ toJSON: function tj2() { found.log = probe(); found.logCaller = tj2.caller; return 2; } });
        await tools.echo({});
        return { call: found.call, log: found.log, callers: [found.callCaller === null, found.logCaller === null] };`,
    });
    const result = value(outcome) as { call: string[][]; log: string[][]; callers: boolean[] };
    for (const sites of [result.call, result.log]) {
      const prelude = sites.filter(([file]) => file === 'sandbox:///prelude.js');
      expect(prelude.length).toBeGreaterThan(0);
      for (const [, fn, self] of prelude) expect([fn, self]).toEqual(['undefined', 'undefined']);
      expect(JSON.stringify(sites)).not.toMatch(HOST_PATHS);
    }
    // `.caller` of a sloppy function called by the strict prelude (or a builtin) is null.
    expect(result.callers).toEqual([true, true]);
  });
});

describe('errors raised inside an entry', () => {
  // Calls and console lines made at every depth near the stack limit, 8 bytes of stack apart. The
  // inline Callback runs worker code on the very stack the program has nearly used up: the bridge may
  // refuse some (a RangeError the program sees, marked `<isolated-vm boundary>`), but nothing the
  // program sees names the worker, and the worker's outbox and state keep working for the next runs.
  it.each([
    ['tool calls', '() => tools.echo({})'],
    ['console lines', "() => console.log('x')"],
  ])('%s at the edge of the stack', async (_label, act) => {
    let hostCalls = 0;
    await sameWorkers(async () => {
      const outcome = await inline({
        code: `
          const act = ${act};
          const shims = [];
          for (let k = 0; k < 24; k++) {
            const names = Array.from({ length: k }, (_, i) => 'a' + i).join(',');
            const values = Array.from({ length: k }, (_, i) => i).join(',');
            shims.push(new Function('act', 'return (function (' + names + ') { return act(); })(' + values + ');'));
          }
          const errors = [];
          const promises = [];
          let deepest = 0;
          const dive = (n) => {
            if (n > deepest) deepest = n;
            try { dive(n + 1); } catch {}
            if (n < deepest - 450) return;
            for (let k = 23; k >= 0; k--) {
              try { const p = shims[k](act); if (p) promises.push(p); } catch (e) { errors.push(e); }
            }
          };
          dive(0);
          const settled = await Promise.allSettled(promises);
          const texts = new Set();
          for (const e of [...errors, ...settled.filter((s) => s.status === 'rejected').map((s) => s.reason)])
            texts.add(String(e && e.name) + ': ' + String(e && e.message) + '\\n' + String(e && e.stack));
          return { fulfilled: settled.filter((s) => s.status === 'fulfilled').length, errors: [...texts].slice(0, 50) };`,
        limits: { cpuMs: 3_000, wallMs: 6_000, maxCalls: 100_000 },
        onCall: async (name, args) => {
          hostCalls++;
          return { name, args };
        },
      });
      const result = value(outcome) as { fulfilled: number; errors: string[] };
      for (const text of result.errors) expect(text).not.toMatch(HOST_PATHS);
      if (act.includes('tools')) {
        expect(result.fulfilled).toBeGreaterThan(0);
        // A call can leave and its promise still be lost to the program's own overflowing push().
        expect(hostCalls).toBeGreaterThanOrEqual(result.fulfilled);
      } else expect(outcome.logs.length).toBeGreaterThan(0);
      await bothWorkersServe();
    });
  });

  it('a stack overflow inside an entry is the program’s own RangeError', async () => {
    await sameWorkers(async () => {
      const overflow = failure(await inline({ code: 'await tools.echo({}); const f = () => f(); f()' }));
      expect(overflow.kind).toBe('runtime');
      expect(overflow.message).toMatch(/^RangeError: Maximum call stack size exceeded/);
      expect(overflow.message).not.toMatch(HOST_PATHS);
      const nested = await inline({
        code: `
          await tools.echo({});
          let a = []; for (let i = 0; i < 100000; i++) a = [a];
          let asArgs; try { await tools.echo({ a }); } catch (e) { asArgs = e.name + ': ' + e.message; }
          return asArgs;`,
      });
      expect(value(nested)).toBe(
        'TypeError: tools.echo: arguments are not JSON-serialisable (RangeError: Maximum call stack size exceeded)',
      );
      await bothWorkersServe();
    });
  });

  it('a growing heap inside an entry ends as memory; its worker retires and is replaced, and both serve', async () => {
    const before = host.workerPids();
    const outcome = await inline({
      code: 'await tools.echo({}); const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length));',
      limits: { cpuMs: 3_000 },
    });
    expect(failure(outcome)).toEqual({
      kind: 'memory',
      message: `the program ran out of memory (limit ${limits.memoryMb} MB)`,
    });
    // What the isolate grew may stay in the worker's resident set: the worker is not given another run.
    await until(
      () => host.workerPids().length === 2 && host.workerPids().some((pid) => !before.includes(pid)),
      {
        what: 'the worker replaced',
      },
    );
    const killed = events.filter((e) => e.type === 'worker_killed');
    expect(killed).toEqual([]);
    await bothWorkersServe();
  });
});

// A program that starts two calls and awaits them in order, the first of which fails: a common
// shape, and the one that leaves a rejection without a handler at the end of an entry.
const AWAIT_IN_ORDER = `
  const a = tools.echo({ fail: true });
  const b = tools.echo({});
  await b;
  try { await a; return 'no'; } catch (e) { return 'caught ' + e.message; }`;
const failFirst = async (name: string, args: JsonValue): Promise<JsonValue> => {
  if ((args as { fail?: boolean }).fail) throw new Error('nope');
  await sleep(20);
  return { name, args };
};
// Program text that isolated-vm rethrows out of applySync, and that entryFailed() then classifies by
// its message: an unhandled rejection, or a throwing Promise species in the prelude's run().
const FORGED = [
  "Promise.reject(new Error('Script execution timed out')); return 1",
  "Promise.reject(new Error('memory limit')); return 1",
  `const C = function () {}; C[Symbol.species] = function () { throw new Error('disposed'); };
   Object.defineProperty(Promise.prototype, 'constructor', { value: C, configurable: true }); return 1`,
];

describe('the same programs on queued entries (for comparison with the problems below)', () => {
  let queued: IsolateHost;
  const runQueued = runner(() => queued);
  beforeAll(async () => {
    queued = await startHost({ workers: 1, inline: false, limits });
  });
  afterAll(() => queued.close());

  it('awaiting two calls in order, the first failing, is caught by the program', async () => {
    const outcome = await runQueued({ code: AWAIT_IN_ORDER, onCall: failFirst });
    expect(outcome.stats.inline).toBe(false);
    expect(value(outcome)).toBe('caught nope');
  });

  it('an unhandled rejection or a throwing Promise species does not end the run', async () => {
    for (const code of FORGED.slice(0, 2)) expect(value(await runQueued({ code }))).toBe(1);
  });
});

describe('problems this suite found, fixed (the comments say what they were)', () => {
  // WAS A DIFFERENCE (issue 18): an inline entry reported the outcome through an ignored Callback,
  // which reaches the worker about 1 ms after the entry (that was a third of a trivial run). So a
  // program that returned while a microtask loop of its own still spun was a timeout inline (the
  // entry's budget ran out before the outcome arrived) and ok queued (the worker got the outcome
  // and disposed of the isolate). Fixed with an inline twin of `done`: ok both ways.
  it('a program that returns while its own microtask loop spins gets its value, as on a queued entry', async () => {
    await sameWorkers(async () => {
      const outcome = await inline({ code: '(async () => { for (;;) await null; })();\nreturn 7' });
      expect(value(outcome)).toBe(7);
    });
  });

  // WAS A BUG (prelude and worker, both ways of entering; predates inline entries): emit() clips a line
  // past the cap with the program's own String.prototype.slice. When that returns anything but a
  // string, the worker's log hook drops it (or isolated-vm refuses to copy it), so the worker never
  // learns that the cap was passed; the program catches the prelude's RangeError and ends normally.
  // Nothing past the cap is kept, but the run is not reported as output_limit.
  // Observed: { ok: true, value: 'finished', logs: [] }. Fix: clip with an intrinsic captured up front.
  it('console output past the cap ends the run as output_limit, slice replaced or not', async () => {
    const outcome = await inline({
      code: `
        await tools.echo({});
        String.prototype.slice = () => 42;
        try { console.log('y'.repeat(100)); } catch {}
        return 'finished';`,
      limits: { maxOutputBytes: 50 },
    });
    expect(failure(outcome).kind).toBe('output_limit');
  });

  // WAS A BUG (prelude, both ways of entering; predates inline entries): binding() counts the call
  // (++calls), serialises the arguments, and only then reads its id (const id = calls). A toJSON in
  // the arguments that makes a call itself takes the next number, so both calls wait under the same
  // id: the outer call resolves with the inner call's result and the inner call never settles.
  // Observed: [{ inner: 1 }, 'inner never settled']. Fix: take the id with the count, before stringify.
  it('a toJSON that calls a tool while the prelude serialises another call’s arguments', async () => {
    const outcome = await inline({
      code: `
        let inner;
        const arg = { toJSON() { inner = tools.echo({ inner: 1 }); return { outer: 1 }; } };
        const outer = await tools.echo(arg);
        const late = await Promise.race([
          inner.then((r) => r.args),
          tools.echo({ tick: 1 }).then(() => tools.echo({ tick: 2 })).then(() => 'inner never settled'),
        ]);
        return [outer.args, late];`,
    });
    expect(value(outcome)).toEqual([{ outer: 1 }, { inner: 1 }]);
  });

  // WAS A BUG: isolated-vm's applySync ends every entry with its TaskEpilogue, which turns a promise still
  // rejected without a handler into an exception thrown out of applySync. enter() takes it for an
  // isolate failure, so the run ends at once as `crash`; on queued entries (applyIgnored) the same
  // epilogue error is dropped and the program catches the rejection a moment later, as it should.
  // Observed: { kind: 'crash', message: 'the isolate failed: nope' }.
  it('awaiting two calls in order, the first failing, is caught by the program', async () => {
    const outcome = await inline({ code: AWAIT_IN_ORDER, onCall: failFirst });
    expect(value(outcome)).toBe('caught nope');
  });

  // WAS A BUG (same root): entryFailed() classifies whatever applySync threw by its message, and the
  // program controls that message, so it can have its run end at once as a CPU `timeout`, as
  // `memory`, or as `crash` with its own text, while it returns 1. A Promise species that throws gets
  // there too: the prelude's run() calls then() on start()'s promise after the program's synchronous
  // part. Observed: timeout "the program used more than 300 ms of CPU time" within a few ms; memory.
  it.each(FORGED.slice(0, 2))('a program cannot choose how its run fails: %s', async (code) => {
    const outcome = await inline({ code });
    expect(value(outcome)).toBe(1);
  });

  // Fixed: the outcome now leaves through done() from inside the prelude's start(), so a program
  // that breaks its own promises (a throwing species) fails with its own runtime error when it
  // awaits, both ways of entering, and never as a forged crash, memory or timeout.
  it('a throwing Promise species fails the program with its own error, nothing worse', async () => {
    const outcome = await inline({ code: FORGED[2] as string });
    expect(failure(outcome)).toMatchObject({
      kind: 'runtime',
      message: expect.stringMatching(/^Error: disposed/),
    });
  });

  // WAS A BUG (two causes, one effect). 1. isolated-vm reads `message` and `stack` of an unhandled
  // rejection's reason (getters, Proxy traps, toString) in that same epilogue, after the entry's
  // timeout was disarmed, on the worker's own thread. 2. isolated-vm's timeout only requests a
  // termination, which V8 honours at its next interrupt check, and Array.prototype.indexOf over a
  // huge sparse array makes none for many seconds. Either way the worker's thread was held past
  // every budget: it could run neither its CPU check nor its wall-clock timer, and only the host's
  // backstop ended the run at wallMs + killGraceMs (about 31 s of CPU with the defaults instead of
  // 10), or isolated-vm's "failed to terminate" path took the worker down (SIGSEGV, run as crash).
  // Fixed: the worker's loop says it is alive every ALIVE_MS while it has an inline run; the host
  // kills a worker silent for longer than an inline entry may take (INLINE_WAIT_FACTOR × the CPU
  // budget, protocol.ts) plus grace. Only this run's worker dies. (A wall clock past that bound, so
  // that the host's run deadline does not come first.)
  it.each([
    [
      'a spinning getter on an unhandled rejection',
      'Promise.reject({ get message() { for (;;) {} } }); return 1',
    ],
    ['a non-interruptible builtin', 'const a = []; a[4294967294] = 1; return a.indexOf(2)'],
  ])('%s still ends at the CPU budget', async (_label, attack) => {
    const mark = events.length;
    const outcome = await inline({ code: `await tools.echo({}); ${attack}`, limits: { wallMs: 5_000 } });
    expect(failure(outcome)).toEqual(CPU_TIMEOUT);
    expect(
      events
        .slice(mark)
        .some((e) => e.type === 'worker_killed' && e.reason === 'an inline entry ran past its CPU budget'),
    ).toBe(true);
    expect(value(await run({ code: 'return "next"' }))).toBe('next');
  });
});
