// A 1,000-call concurrency-safe batch through the tool pipeline with a durable log (or none), as
// bench/store-log.ts and bench/store-backends.ts measure it: medians over groups of batches.

import type { EventLog } from '../../host/store/types.ts';
import { createRegistry } from '../../host/tools/index.ts';
import { benchAgent, noop, noopBatch } from './noop-tool.ts';

export const BATCH = 1000;
export const GROUPS = Number(process.env.BENCH_GROUPS ?? 7);
export const PER_GROUP = 6;
const agent = benchAgent;
const batchCalls = noopBatch(BATCH);
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

export interface BatchFigures {
  answerMs: number;
  cpuMs: number;
  durableMs: number;
}

/**
 * Medians over groups of batches (thread CPU time ticks in coarse steps on this kernel, so CPU is
 * read per group and divided): answer = execute's wall time, cpu = main-thread CPU of execute and
 * flush, durable = wall time of execute and flush.
 */
export const batchRun = async (log: EventLog | undefined): Promise<BatchFigures> => {
  const registry = createRegistry(log === undefined ? {} : { log });
  registry.global.register(noop);
  const scope = registry.scope('preset:bench').child('agent:bench');
  const one = async () => {
    const start = performance.now();
    await scope.execute(batchCalls, { agent });
    const answered = performance.now();
    await log?.flush();
    return { answer: answered - start, durable: performance.now() - start };
  };
  for (let i = 0; i < 3; i++) await one(); // warm-up
  const answers: number[] = [];
  const durables: number[] = [];
  const cpus: number[] = [];
  for (let g = 0; g < GROUPS; g++) {
    const cpu = process.threadCpuUsage();
    for (let i = 0; i < PER_GROUP; i++) {
      const { answer, durable } = await one();
      answers.push(answer);
      durables.push(durable);
    }
    const used = process.threadCpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000 / PER_GROUP);
  }
  return { answerMs: median(answers), cpuMs: median(cpus), durableMs: median(durables) };
};
