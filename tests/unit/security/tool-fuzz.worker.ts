// The tool fuzz itself, run in a worker thread so that the test's own thread can watch it: a tool
// body that spins forever freezes this thread's event loop, which nothing inside it could notice.
// Here: the service as serve.ts composes it (assembleAgents: every builtin tool, the timeout policy,
// run_code over a real isolate host, workflow and ralph), the memory sandbox provider with a
// workspace of hostile files, and the HTTP app in front. For every tool every preset offers, fast-check
// generates hostile schema-valid arguments; each call must settle within callBoundMs (a hang guard)
// with a result (never an internal error); a call that freezes the event loop stops the `beat` the
// parent watches. The loop's longest stall during each call is measured, not judged here: the
// figures (against the same loop idle, `baselineMs`) are bench/tool-lag.ts's. Messages to the
// parent: `beat` (the loop is alive), `call` (what is running now), then `done` with the failures
// and per-tool measurements.
import { parentPort, workerData } from 'node:worker_threads';
import fc from 'fast-check';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createAgentService } from '../../../host/agents/service.ts';
import { createApp } from '../../../host/api/app.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import type { MemoryRun } from '../../../host/sandbox/memory/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import type { Sandbox, SandboxProvider, SandboxTerminals } from '../../../host/sandbox/types.ts';
import { openStore } from '../../../host/store/index.ts';
import type { JsonSchema } from '../../../host/tools/types.ts';
import type { SpawnProvider } from '../../../host/tools/workflow/index.ts';
import { createEchoTerminals } from './echo-terminals.ts';
import { arbitraryFor, summarize } from './hostile-args.ts';

export interface FuzzOptions {
  seed: number;
  /** Generated calls per tool, besides the pinned examples. */
  runs: number;
  /** A call that has not settled after this long fails (a hang guard, not a speed claim). */
  callBoundMs: number;
  /** Before the fuzz, measure the idle loop's longest stall over this long (the bench's baseline). */
  baselineMs?: number;
  /** Only tools whose name is listed (all when absent). */
  only?: string[];
  /** Post a `trace` message after every call (for looking into a slow tool). */
  trace?: boolean;
}

export interface ToolStats {
  tool: string;
  preset: string;
  calls: number;
  maxLagMs: number;
  maxSettleMs: number;
}

export type FuzzMessage =
  | { type: 'beat' }
  | { type: 'call'; tool: string; args: string }
  | { type: 'failure'; failure: string }
  | { type: 'trace'; tool: string; args: string; lagMs: number; settleMs: number }
  | { type: 'done'; failures: string[]; stats: ToolStats[]; idleLagMs?: number };

const options = workerData as FuzzOptions;
const post = (message: FuzzMessage): void => parentPort?.postMessage(message);

const MiB = 1024 * 1024;
const line = (i: number) => `line ${i} hello world ${'x'.repeat(i % 80)}\n`;
const many = (n: number) => {
  const out: string[] = [];
  for (let i = 0, size = 0; size < n; i++) {
    out.push(line(i));
    size += (out[i] as string).length;
  }
  return out.join('');
};
const FILES: Record<string, Buffer> = {
  'a.txt': Buffer.from('hello\nworld\nhello again\n'),
  'big.txt': Buffer.from(many(6 * MiB)),
  // At the read limit (10 MiB): the most lines a file the text tools accept can have.
  'newlines.txt': Buffer.alloc(10 * MiB, '\n'),
  'one-line.txt': Buffer.alloc(2 * MiB, 'a'),
  'crlf.txt': Buffer.from('a\r\n'.repeat(100_000)),
  'escapes.txt': Buffer.from('\u001b[31mX\u001b[0m\r'.repeat(50_000)),
  'unicode.txt': Buffer.concat(
    Array.from({ length: 5000 }, () =>
      Buffer.concat([Buffer.from('\u202Eabc\u0301 e\u0301\n'), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x0a])]),
    ),
  ),
  'bin.dat': Buffer.from([1, 0, 2, 3]),
  'img.png': Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64)]),
  'dir/sub/deep.txt': Buffer.from('deep\n'),
};
for (let i = 0; i < 2000; i++) FILES[`many/f${i}.txt`] = Buffer.from(`file ${i}\n`);

const resetWorkspace = async (sandbox: Sandbox): Promise<void> => {
  for (const entry of await sandbox.fs.list('.')) await sandbox.fs.remove(entry.name, { recursive: true });
  for (const [path, data] of Object.entries(FILES)) await sandbox.fs.writeFile(path, data);
};

/** exec and jobs print their command back, on stdout and stderr: model input as program output. */
const echoRun: MemoryRun = (proc) => {
  proc.stdout(proc.command);
  proc.stderr(proc.command.slice(0, 1000));
  return proc.command.length % 3;
};

/** Subagents answer at once with text made from their prompt. */
const spawner: SpawnProvider = {
  async spawn(request) {
    const p = request.prompt;
    return { text: p.length % 4 === 0 ? `DONE ${p.slice(0, 200)}` : `${p.slice(0, 5000)}\u202E\u0000` };
  },
};

/** The memory provider with a terminal double attached to each of its sandboxes. */
const withTerminals = (provider: SandboxProvider): SandboxProvider => {
  const terminals = new Map<string, SandboxTerminals>();
  const attach = (sandbox: Sandbox): Sandbox => {
    const t = terminals.get(sandbox.id) ?? createEchoTerminals();
    terminals.set(sandbox.id, t);
    return { ...sandbox, terminals: t };
  };
  return {
    ...provider,
    flags: { ...provider.flags, terminals: true },
    create: async (spec) => attach(await provider.create(spec)),
    get: async (id) => {
      const found = await provider.get(id);
      return found === undefined ? undefined : attach(found);
    },
  };
};

/** Calls a test should make whatever the generator draws: the instances that broke things before. */
const PINNED: Record<string, unknown[]> = {
  str_replace_editor: [
    { command: 'str_replace', path: '/workspace/a.txt', old_str: '', new_str: 'x' },
    { command: 'str_replace', path: 'one-line.txt', old_str: 'a', new_str: 'b' },
    { command: 'str_replace', path: 'a.txt', old_str: 'world', new_str: 'x'.repeat(400_000) },
    { command: 'view', path: 'big.txt' },
    { command: 'view', path: 'newlines.txt' },
    { command: 'view', path: 'one-line.txt', view_range: [1, -1] },
    { command: 'insert', path: 'newlines.txt', insert_line: 5_000_000, new_str: '\n'.repeat(400_000) },
    { command: 'view', path: 'many' },
  ],
  edit: [
    { file_path: 'one-line.txt', old_string: 'a', new_string: 'b'.repeat(400_000), replace_all: true },
    { file_path: 'one-line.txt', old_string: 'a', new_string: '', replace_all: true },
    { file_path: 'newlines.txt', old_string: '\n', new_string: '\r\n', replace_all: true },
    { file_path: 'newlines.txt', old_string: '\n'.repeat(400_000), new_string: 'x' },
  ],
  read: [{ file_path: 'newlines.txt' }, { file_path: 'one-line.txt' }, { file_path: 'escapes.txt' }],
  grep: [{ pattern: 'hello', path: 'big.txt' }],
  glob: [{ pattern: '**/*' }],
  bash: [{ command: `\u001b[${'1;'.repeat(200_000)}`, description: 'escapes' }],
  terminal_send: [
    { sessionId: 'term-1', text: `\u001b[${'1;'.repeat(200_000)}` },
    { sessionId: 'term-1', text: 'ab\r'.repeat(300_000) },
    { sessionId: 'term-1', text: 'plain text '.repeat(90_000) },
  ],
  terminal_read: [{ sessionId: 'term-1', offset: 0, count: 262_144 }],
  run_code: [
    { code: "return await tools.read({ file_path: 'newlines.txt' })", description: 'read' },
    {
      code: "return await tools.edit({ file_path: 'one-line.txt', old_string: 'a', new_string: 'bb', replace_all: true })",
      description: 'edit',
    },
    { code: 'let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a', description: 'deep' },
    {
      code: "for (let i = 0; i < 20000; i++) console.log('\\u202E'.repeat(50)); return 1",
      description: 'logs',
    },
    { code: "return 'x'.repeat(2_000_000)", description: 'big' },
  ],
  workflow: [
    { script: 'return args', meta: { name: 'w', description: 'd' }, args: { deep: nestedArgs(5000) } },
    {
      script:
        "const r = []; for (let i = 0; i < 64; i++) r.push(await agent('p'.repeat(90000))); return r.length",
      meta: { name: 'w', description: 'd' },
    },
  ],
  ralph: [{ objective: 'x'.repeat(20_000), maxRounds: 64 }],
};

function nestedArgs(depth: number): unknown {
  let value: unknown = 'deep';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const MUTATING = new Set(['write', 'edit', 'str_replace_editor', 'run_code']);

const main = async (): Promise<void> => {
  const beat = setInterval(() => post({ type: 'beat' }), 100);
  const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
  const failures: string[] = [];
  const stats: ToolStats[] = [];
  let idleLagMs: number | undefined;
  // The longest gap between ticks of a 10 ms interval, beyond the 10 ms: how long the loop stalled.
  // (Not monitorEventLoopDelay: on Node 24 it misses stalls outside the timers phase.)
  const loop = { max: 0, last: performance.now() };
  const probe = setInterval(() => {
    const now = performance.now();
    loop.max = Math.max(loop.max, now - loop.last - 10);
    loop.last = now;
  }, 10);
  try {
    const store = openStore({ path: ':memory:' });
    const sandboxes = withTerminals(createMemoryProvider({ run: echoRun }));
    const { registry } = assembleAgents({ store, sandboxes, isolates });
    // ask_user_question and a foreground subagent wait for the client by design: nobody answers
    // here, so their requests expire quickly (the call settles as REQUEST_EXPIRED) instead of after
    // the defaults (five minutes, half an hour); wait_agent waits at most as long.
    const agents = createAgentService({
      store,
      registry,
      sandboxes,
      spawn: spawner,
      questionTtlMs: 200,
      children: { limits: { runTtlMs: 200, waitMaxMs: 200 } },
    });
    const app = createApp({ startedAt: Date.now(), version: 'fuzz', store, agents });
    const tenant = await store.tenants.createTenant('fuzz');
    const apiKey = tenant.apiKey;
    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await app.request(path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };

    // Every tool of every preset, as the API lists it for an agent that may use all of them.
    const targets: { preset: string; agentId: string; sandbox: Sandbox; name: string; schema: JsonSchema }[] =
      [];
    const seen = new Set<string>();
    for (const preset of ['standard', 'code', 'minimal', 'creator']) {
      let created = await api('POST', '/v1/agents', { preset, mode: 'both', subagents: true });
      if (created.status !== 201) created = await api('POST', '/v1/agents', { preset, subagents: true });
      if (created.status !== 201) throw new Error(`create ${preset}: ${JSON.stringify(created.json)}`);
      const agentId = created.json.id as string;
      const sandbox = await agents.sandbox(await agents.get(tenant.id, agentId));
      await resetWorkspace(sandbox);
      // The terminal the pinned terminal calls name, and the persistent shell of the minimal preset.
      await sandbox.terminals?.open({ name: 'fuzz' });
      const listed = (await api('GET', `/v1/agents/${agentId}/tools`)).json.tools as {
        name: string;
        parameters: JsonSchema;
      }[];
      for (const tool of listed) {
        const key = `${tool.name} ${JSON.stringify(tool.parameters)}`;
        if (seen.has(key) || (options.only && !options.only.includes(tool.name))) continue;
        seen.add(key);
        targets.push({ preset, agentId, sandbox, name: tool.name, schema: tool.parameters });
      }
    }

    if (options.baselineMs) {
      loop.max = 0;
      loop.last = performance.now();
      await new Promise((resolve) => setTimeout(resolve, options.baselineMs));
      idleLagMs = loop.max;
    }

    for (const target of targets) {
      const stat: ToolStats = {
        tool: target.name,
        preset: target.preset,
        calls: 0,
        maxLagMs: 0,
        maxSettleMs: 0,
      };
      stats.push(stat);
      const property = fc.asyncProperty(arbitraryFor(target.schema), async (args) => {
        post({ type: 'call', tool: target.name, args: JSON.stringify(summarize(args)) });
        stat.calls++;
        loop.max = 0;
        loop.last = performance.now();
        const started = performance.now();
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'deadline'>((resolve) => {
          timer = setTimeout(() => resolve('deadline'), options.callBoundMs);
        });
        const settled = await Promise.race([
          api('POST', `/v1/agents/${target.agentId}/calls`, {
            calls: [{ id: 'fuzz-1', name: target.name, arguments: args }],
          }),
          deadline,
        ]);
        clearTimeout(timer);
        const settleMs = performance.now() - started;
        const lagMs = Math.max(loop.max, performance.now() - loop.last - 10);
        stat.maxSettleMs = Math.max(stat.maxSettleMs, settleMs);
        stat.maxLagMs = Math.max(stat.maxLagMs, lagMs);
        if (options.trace)
          post({ type: 'trace', tool: target.name, args: JSON.stringify(summarize(args)), lagMs, settleMs });
        if (MUTATING.has(target.name)) await resetWorkspace(target.sandbox);
        if (settled === 'deadline') throw new Error(`did not settle within ${options.callBoundMs} ms`);
        // A call the API accepted settles as a result; a body over the API's limit is refused whole.
        if (settled.status === 413) return;
        const result = (
          settled.json.results as { ok: boolean; error?: { code: string; message: string } }[]
        )?.[0];
        if (settled.status !== 200 || result === undefined)
          throw new Error(`answered ${settled.status} ${JSON.stringify(settled.json).slice(0, 300)}`);
        if (!result.ok && (result.error?.code === 'INTERNAL' || result.error?.code === undefined))
          throw new Error(`failed internally: ${JSON.stringify(result.error).slice(0, 300)}`);
      });
      const examples = (PINNED[target.name] ?? []).map((args): [unknown] => [args]);
      // Examples count towards numRuns: the pinned calls run first, then `runs` generated ones.
      const run = await fc.check(property, {
        seed: options.seed,
        numRuns: options.runs + examples.length,
        endOnFailure: true,
        examples,
      });
      if (run.failed) {
        const why =
          run.errorInstance instanceof Error ? run.errorInstance.message : String(run.errorInstance);
        const failure = `${target.name} (${target.preset}) ${why.slice(0, 300)}: ${JSON.stringify(summarize(run.counterexample?.[0]))}`;
        failures.push(failure);
        post({ type: 'failure', failure });
      }
    }
    await agents.close(0);
    store.close();
  } finally {
    clearInterval(probe);
    clearInterval(beat);
    await isolates.close();
  }
  post({ type: 'done', failures, stats, ...(idleLagMs === undefined ? {} : { idleLagMs }) });
};

await main();
