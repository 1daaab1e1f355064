// What a worker pays to prepare one isolate slot, `node --no-node-snapshot bench/isolate-slot.ts`
// (issue 33). A worker makes a slot after every run (worker.ts refill), so under back-to-back
// run_code calls this CPU competes with the runs on the critical path. In THIS process, under the
// worker's V8 flags, alternating round by round:
//   1. createSlot() as a worker makes it (the prelude compiled from V8's code cache);
//   2. the same steps with the prelude compiled from source every time (the code before the cache);
//   3. the parts of (2): new Isolate, createContext, compile, run, install (with its warm-up), get;
// and, on each slot of (1) and (2), the first run of `return 1` entered inline as a worker enters
// it (so a cheaper slot is not paid for by a slower run). CPU is process.cpuUsage() (all threads).
// BENCH_RUNS (60) slots per round, BENCH_ROUNDS (4). The machine is shared: compare within a run.
import { setFlagsFromString } from 'node:v8';
import ivm from 'isolated-vm';
import { ISOLATE_V8_FLAGS } from '../host/isolates/fork.ts';
import { compileProgram } from '../host/isolates/index.ts';
import { PRELUDE_FILENAME, PRELUDE_SOURCE } from '../host/isolates/prelude.ts';
import { createSlot, type Slot, startRun } from '../host/isolates/worker-run.ts';
import { median } from './lib/timing.ts';

for (const flag of ISOLATE_V8_FLAGS) setFlagsFromString(flag);
const RUNS = Number(process.env.BENCH_RUNS ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const MEMORY_MB = 64;
const limits = {
  wallMs: 30_000,
  cpuMs: 30_000,
  memoryMb: MEMORY_MB,
  maxOutputBytes: 65_536,
  maxCallBytes: 65_536,
  maxResultBytes: 65_536,
  maxCalls: 100,
};
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const compiled = await compileProgram('return 1');
if (!compiled.ok) throw new Error(compiled.message);
const src = compiled.program.js;

/** The slot the way worker-slot.ts made it before the code cache, its parts' CPU added to `parts`. */
async function uncachedSlot(parts: Record<string, number>): Promise<Slot> {
  let c = cpuUs();
  const step = (name: string) => {
    const now = cpuUs();
    parts[name] = (parts[name] ?? 0) + now - c;
    c = now;
  };
  const isolate = new ivm.Isolate({ memoryLimit: MEMORY_MB });
  step('new Isolate');
  const context = await isolate.createContext();
  step('createContext');
  const script = await isolate.compileScript(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME });
  step('compile');
  const install = await script.run(context, { reference: true });
  step('run');
  let hooks: Parameters<Slot['attach']>[0] | undefined;
  const onCall = (id: unknown, name: unknown, args: unknown) => hooks?.call(id, name, args);
  const onLog = (code: unknown, text: unknown) => hooks?.log(code, text);
  const onDone = (result: unknown) => hooks?.done(result);
  const args = [onCall, onLog, onDone].flatMap((f) => [
    new ivm.Callback(f, { ignored: true }),
    new ivm.Callback(f),
  ]);
  const api = (await install.apply(undefined, args, { result: { reference: true } })) as ivm.Reference<{
    run: unknown;
    deliver: unknown;
  }>;
  step('install');
  const run = (await api.get('run', { reference: true })) as Slot['run'];
  const deliver = (await api.get('deliver', { reference: true })) as Slot['deliver'];
  step('get');
  const attach = (h: Parameters<Slot['attach']>[0]) => {
    hooks = h;
  };
  return { memoryMb: MEMORY_MB, isolate, run, deliver, attach };
}

/** CPU (µs) of the first run of `return 1` on the slot, inline; the slot is disposed after it. */
async function firstRun(slot: Slot): Promise<number> {
  const before = cpuUs();
  await new Promise<void>((resolve, reject) => {
    const run = startRun(
      slot,
      { t: 'run', id: 1, src, bindings: [], globalsJson: '{}', limits, inline: true },
      {
        call: () => undefined,
        done: (outcome) => (outcome.ok ? resolve() : reject(new Error(outcome.message))),
        inline: () => true,
      },
    );
    run.begin();
  });
  return cpuUs() - before;
}

const made: Record<'cached' | 'uncached', number[]> = { cached: [], uncached: [] };
const ran: Record<'cached' | 'uncached', number[]> = { cached: [], uncached: [] };
const parts: Record<string, number> = {};
await firstRun(await createSlot(MEMORY_MB)); // the code cache is made here, as by a worker's first slot
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of round % 2 === 0
    ? (['cached', 'uncached'] as const)
    : (['uncached', 'cached'] as const)) {
    for (let i = 0; i < RUNS; i++) {
      const before = cpuUs();
      const slot = kind === 'cached' ? await createSlot(MEMORY_MB) : await uncachedSlot(parts);
      made[kind].push(cpuUs() - before);
      ran[kind].push(await firstRun(slot));
    }
  }
}
const ms = (us: number) => (us / 1000).toFixed(3);
const n = made.uncached.length;
console.log(`isolate slot, CPU per slot (median of ${n}, ${ROUNDS} alternated rounds), ms:`);
console.log(
  `  createSlot with the prelude's code cache ${ms(median(made.cached))}; compiled from source ${ms(median(made.uncached))} (×${(median(made.cached) / median(made.uncached)).toFixed(2)})`,
);
console.log(
  `  its first run of \`return 1\` (inline, dispose included): cached ${ms(median(ran.cached))}, from source ${ms(median(ran.uncached))}`,
);
console.log(
  `  from source, mean per part: ${Object.entries(parts)
    .map(([name, us]) => `${name} ${ms(us / n)}`)
    .join(', ')}`,
);
