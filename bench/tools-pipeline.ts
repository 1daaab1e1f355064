// Pipeline overhead benchmark: a no-op tool called through the full host pipeline versus its body
// called directly, in the same run. Run: node --no-node-snapshot bench/tools-pipeline.ts
// Figures: median per-call time over rounds (single sequential calls, with and without the
// in-memory durable log) and a 1,000-call batch of concurrency-safe no-op calls. Then what a
// tenant's policy pattern costs (the claim behind tests/unit/security/policy-redos.test.ts): a
// rule whose condition is the catastrophic `^(a+)+$` against a 5,000-character argument, matched by
// the linear-time engine, versus a literal condition on the same argument, per call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { openStore } from '../host/store/index.ts';
import { createMemoryEventLog } from '../host/store/memory.ts';
import { createRegistry, defineTool, type ExecContext, type ToolCall } from '../host/tools/index.ts';
import { rulesPolicy } from '../policies/index.ts';
import { benchAgent, noop, noopBatch } from './lib/noop-tool.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const BATCH = 1_000;

const agent = benchAgent;
const exec: ExecContext = {
  signal: new AbortController().signal,
  callId: 'direct',
  agent,
  callTool: () => Promise.reject(new Error('not used')),
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

/** Median over rounds of (round time / calls) in microseconds. */
const measure = async (calls: number, body: (i: number) => Promise<unknown>): Promise<number> => {
  for (let i = 0; i < Math.min(calls, 2_000); i++) await body(i); // warm-up
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await body(i);
    perCall.push(((performance.now() - start) * 1000) / calls);
  }
  return median(perCall);
};

const plain = createRegistry();
plain.global.register(noop);
const plainScope = plain.scope('preset:bench').child('agent:bench');

const log = createMemoryEventLog();
const logged = createRegistry({ log });
logged.global.register(noop);
const loggedScope = logged.scope('preset:bench').child('agent:bench');

// The durable log as the service runs it: libsql in a file (WAL), events batched per 2 ms window.
const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-'));
const store = openStore({ dataDir });
const durable = createRegistry({ log: store.events });
durable.global.register(noop);
const durableScope = durable.scope('preset:bench').child('agent:bench');

const one = (i: number): ToolCall[] => [{ id: `c${i}`, name: 'noop', arguments: { n: i } }];
const batchCalls = noopBatch(BATCH);

const direct = await measure(CALLS, async (i) => noop.execute({ n: i }, exec));
const pipeline = await measure(CALLS, (i) => plainScope.execute(one(i), { agent }));
const withLog = await measure(CALLS, async (i) => {
  const r = await loggedScope.execute(one(i), { agent });
  if (i % 1000 === 999) await log.flush();
  return r;
});

const withDurable = await measure(Math.min(CALLS, 5_000), async (i) => {
  const r = await durableScope.execute(one(i), { agent });
  if (i % 1000 === 999) await store.events.flush();
  return r;
});

const batchRounds = Math.max(5, Math.round(CALLS / BATCH));
const directBatch = await measure(batchRounds, async () =>
  Promise.all(batchCalls.map((c) => noop.execute(c.arguments as { n: number }, exec))),
);
const pipelineBatch = await measure(batchRounds, () => plainScope.execute(batchCalls, { agent }));
const loggedBatch = await measure(batchRounds, async () => {
  await loggedScope.execute(batchCalls, { agent });
  await log.flush();
});
const durableBatch = await measure(batchRounds, async () => {
  await durableScope.execute(batchCalls, { agent });
  await store.events.flush();
});
// A rule's condition over a long argument: catastrophic pattern (linear engine) vs a literal one.
const echo = defineTool({
  name: 'echo',
  description: 'Returns its text.',
  parameters: v.object({ text: v.string() }),
  output: { schema: v.string() },
  execute: (args) => args.text,
});
const ruled = (pattern: string) => {
  const registry = createRegistry();
  registry.global.register(echo);
  rulesPolicy({ rules: [{ tool: 'echo', when: { text: pattern }, decision: 'deny' }] }).install(
    registry.global,
  );
  return registry.scope('preset:bench').child('agent:bench');
};
const longText = `${'a'.repeat(5_000)}!`;
const echoCall: ToolCall[] = [{ id: 'e', name: 'echo', arguments: { text: longText } }];
const ruleCalls = Math.max(200, Math.round(CALLS / 20));
const literalScope = ruled('^b$');
const catastrophicScope = ruled('^(a+)+$');
const literalRule = await measure(ruleCalls, () => literalScope.execute(echoCall, { agent }));
const catastrophicRule = await measure(ruleCalls, () => catastrophicScope.execute(echoCall, { agent }));

log.close();
store.close();
rmSync(dataDir, { recursive: true, force: true });

const f = (us: number) => `${us.toFixed(2)} µs`;
const rows: [string, string, string][] = [
  ['direct body call (await)', f(direct), '1.0x'],
  ['pipeline, no log', f(pipeline), `${(pipeline / direct).toFixed(1)}x`],
  ['pipeline, in-memory log', f(withLog), `${(withLog / direct).toFixed(1)}x`],
  ['pipeline, durable libsql log (file, WAL)', f(withDurable), `${(withDurable / direct).toFixed(1)}x`],
  [
    `${BATCH}-call safe batch, direct (Promise.all), per batch`,
    `${(directBatch / 1000).toFixed(2)} ms`,
    '1.0x',
  ],
  [
    `${BATCH}-call safe batch, pipeline no log, per batch`,
    `${(pipelineBatch / 1000).toFixed(2)} ms`,
    `${(pipelineBatch / directBatch).toFixed(1)}x`,
  ],
  [
    `${BATCH}-call safe batch, pipeline + in-memory log, per batch`,
    `${(loggedBatch / 1000).toFixed(2)} ms`,
    `${(loggedBatch / directBatch).toFixed(1)}x`,
  ],
  [
    `${BATCH}-call safe batch, pipeline + durable libsql log, per batch`,
    `${(durableBatch / 1000).toFixed(2)} ms`,
    `${(durableBatch / directBatch).toFixed(1)}x`,
  ],
  ['rule `^b$` on a 5,000-char argument, per call', f(literalRule), '1.0x'],
  [
    'rule `^(a+)+$` on the same (linear engine), per call',
    f(catastrophicRule),
    `${(catastrophicRule / literalRule).toFixed(1)}x`,
  ],
];
console.log(`tools-pipeline bench (node ${process.version}, ${ROUNDS} rounds x ${CALLS} calls; medians)`);
for (const [label, value, ratio] of rows) console.log(`${label.padEnd(58)} ${value.padStart(12)}  ${ratio}`);
console.log(
  `overhead per call: no log ${f(pipeline - direct)}, in-memory log ${f(withLog - direct)}; ` +
    `per call in a ${BATCH}-call batch: ${f((pipelineBatch - directBatch) / BATCH)} (no log), ${f((loggedBatch - directBatch) / BATCH)} (log), ${f((durableBatch - directBatch) / BATCH)} (durable log)`,
);
