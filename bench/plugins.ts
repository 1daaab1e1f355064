// What a creator plugin costs: `node --no-node-snapshot bench/plugins.ts`.
// 1. The runtime's first start (the worker process boots and loads isolated-vm), then a plugin's
//    start (isolate + prelude + body + apply, with one tool registered), update and stop.
// 2. Resident memory per idle running plugin (the worker's /proc statm over 20 plugins).
// 3. One call of a plugin tool (into its isolate and back), one that makes an inner call of an
//    agent tool (two more crossings), and the same work as a plain host function for reference;
//    sequential, and 16 at once.
import { readFileSync } from 'node:fs';
import type { JsonValue, PluginCapabilities, PluginTool } from '../host/plugins/index.ts';
import { createPluginRuntime } from '../host/plugins/index.ts';

const owner = { tenantId: 'bench', agentId: 'bench' };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? Number.NaN;
const ms = (x: number) => (x < 1 ? `${(x * 1000).toFixed(1)} µs` : `${x.toFixed(2)} ms`);
const rssMb = (pid: number) =>
  (Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096) / 2 ** 20;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

const tools = new Map<string, PluginTool>();
const capabilities: PluginCapabilities = {
  registerTool(tool) {
    tools.set(tool.name, tool);
    return () => tools.delete(tool.name);
  },
  callTool: async (request) => ({ echoed: request.args }),
};
const SOURCE = (tag: string) => `return { name: 'bench', apply(ctx) {
  ctx.tools.register({ name: 'add${tag}', execute: ({ a, b }) => a + b });
  ctx.tools.register({ name: 'inner${tag}', async execute(args, exec) { return (await exec.call('echo', args)).echoed } });
} }`;

const runtime = createPluginRuntime();
let n = 0;
const start = async (source: string) => {
  const t = performance.now();
  const result = await runtime.start({ owner, pluginId: `b${++n}`, packageId: 'pkg', source, capabilities });
  if (!result.ok) throw new Error(result.error.message);
  return performance.now() - t;
};

const first = await start(SOURCE(''));
console.log(`first start (worker boot + plugin): ${ms(first)}`);
const pluginId = `b${n}`;

const starts: number[] = [];
const stops: number[] = [];
for (let i = 0; i < 30; i++) {
  starts.push(await start(SOURCE(`_s${i}`)));
  const t = performance.now();
  await runtime.stop(owner, `b${n}`);
  stops.push(performance.now() - t);
}
console.log(
  `plugin start (isolate, prelude, body, apply, 2 tools): median ${ms(median(starts))}, p95 ${ms(p95(starts))}`,
);
console.log(`plugin stop: median ${ms(median(stops))}`);
const updates: number[] = [];
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  await runtime.update(owner, pluginId, { packageId: `pkg${i}`, source: SOURCE('') });
  updates.push(performance.now() - t);
}
console.log(`plugin update (dispose old, load new): median ${ms(median(updates))}`);

const [pid] = runtime.pids();
await sleep(300);
const before = rssMb(pid ?? 0);
for (let i = 0; i < 20; i++) await start(SOURCE(`_m${i}`));
await sleep(300);
console.log(
  `resident memory per idle plugin: ${((rssMb(pid ?? 0) - before) / 20).toFixed(2)} MB (worker at ${rssMb(pid ?? 0).toFixed(0)} MB)`,
);

const call = (name: string, args: JsonValue) =>
  (tools.get(name) as PluginTool).execute(args, { callId: 'c', signal: new AbortController().signal });
const time = async (label: string, fn: () => Promise<unknown>, count = 2000) => {
  for (let i = 0; i < 200; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  console.log(`${label}: median ${ms(median(samples))}, p95 ${ms(p95(samples))}`);
};
const host = async ({ a, b }: { a: number; b: number }) => a + b;
await time('host function (reference)', () => host({ a: 1, b: 2 }));
await time('plugin tool call', () => call('add', { a: 1, b: 2 }));
await time('plugin tool call with one inner agent-tool call', () => call('inner', { x: 1 }));
const burst = async (name: string) => {
  const t = performance.now();
  await Promise.all(Array.from({ length: 16 }, () => call(name, { a: 1, b: 2 })));
  return performance.now() - t;
};
const bursts: number[] = [];
for (let i = 0; i < 200; i++) bursts.push(await burst('add'));
console.log(`16 plugin tool calls at once: median ${ms(median(bursts))} for all 16`);
await runtime.close();
