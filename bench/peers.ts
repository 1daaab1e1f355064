// Code mode side by side with what a user would pick instead, `node --no-node-snapshot bench/peers.ts`.
// The same two programs everywhere, each run in a fresh sandbox from its source text to its result:
//   trivial   `return 1`
//   20 calls  `for (let i = 0; i < 20; i++) await tools.noop({}); return 1`, noop a host function
//             that does nothing.
// Contestants:
// - ours, run_code: the whole tool call through the registry (pipeline, log, compile, a prepared
//   isolate in a worker process; each noop call brokered back to the pipeline).
// - ours, isolate host: the same programs with onCall a no-op function (no pipeline).
// - workerd (npm `workerd`): a parent Worker loads a new dynamic Worker per program through the
//   Worker Loader binding, the way Cloudflare's Code Mode does, with `tools` an RPC stub of a
//   loopback entrypoint of the parent; driven over HTTP on localhost (its only way in), so the
//   bench also prints the same HTTP round trip to a handler that does nothing.
// - QuickJS (npm `quickjs-emscripten`): a new runtime and context per program in this process (the
//   WebAssembly module loaded once); noop a host function called synchronously.
// - Deno (npm `deno`): a cold `deno run` per program with no permissions; noop a function of the
//   same script (there is no host to cross to).
// Each prints median and p99 and its ratio to ours (run_code); a peer that is not installed is
// named as such and skipped. The machine is shared: repeat runs and read ranges.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createIsolateHost } from '../host/isolates/index.ts';
import { codeModeScope } from './code-mode-scope.ts';

const REPS = Number(process.env.BENCH_RUNS ?? 100);
/** Cold processes are slow: fewer of them. */
const PROCESS_REPS = Number(process.env.BENCH_PROCESS_RUNS ?? 15);
/** Between two programs, as an idle service sees them (our workers prepare isolates meanwhile). */
const GAP_MS = 10;
const PROGRAMS = {
  trivial: 'return 1;',
  calls20: 'for (let i = 0; i < 20; i++) await tools.noop({});\nreturn 1;',
} as const;
type ProgramName = keyof typeof PROGRAMS;
type Runner = (code: string) => Promise<unknown>;
interface Contestant {
  name: string;
  reps: number;
  start(): Promise<Runner | string>;
  stop?(): Promise<void>;
}

const require = createRequire(import.meta.url);
const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};
const fmt = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const resolvePath = (specifier: string): string | undefined => {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
};

async function measure(run: Runner, code: string, reps: number): Promise<number[]> {
  for (let i = 0; i < Math.min(5, reps); i++) if ((await run(code)) !== 1) throw new Error('wrong result');
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    await sleep(GAP_MS);
    const started = performance.now();
    const value = await run(code);
    samples.push(performance.now() - started);
    if (value !== 1) throw new Error(`wrong result ${JSON.stringify(value)}`);
  }
  return samples;
}

// --- ours ------------------------------------------------------------------------------------------
const isolates = createIsolateHost({ workers: 2, prewarm: 2 });
const ours: Contestant = {
  name: 'ours: run_code (pipeline + isolate worker)',
  reps: REPS,
  async start() {
    return codeModeScope(isolates).runCode;
  },
};

const oursHost: Contestant = {
  name: 'ours: isolate host, onCall a no-op',
  reps: REPS,
  async start() {
    return async (code) => {
      const outcome = await isolates.run({ code, bindings: ['noop'], onCall: async () => null });
      if (!outcome.ok) throw new Error(outcome.message);
      return outcome.value;
    };
  },
};

// --- workerd ---------------------------------------------------------------------------------------
const PARENT_WORKER = `
import { WorkerEntrypoint } from 'cloudflare:workers';
export class Tools extends WorkerEntrypoint {
  async noop(_args) { return null; }
}
let programs = 0;
export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/noop') return new Response('1');
    const code = await request.text();
    // A new id per program: a new isolate each time, never a cached one.
    const worker = env.LOADER.get('program-' + ++programs, () => ({
      compatibilityDate: '2025-06-01',
      mainModule: 'program.js',
      modules: {
        'program.js': 'export default { async fetch(request, env) { const tools = env.TOOLS; const value = await (async () => {\\n' + code + '\\n})(); return new Response(JSON.stringify(value)); } }',
      },
      env: { TOOLS: ctx.exports.Tools({ props: {} }) },
      globalOutbound: null,
    }));
    return worker.getEntrypoint().fetch('http://program/');
  },
};
`;

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

let stopWorkerd: (() => void) | undefined;
const workerd: Contestant = {
  name: 'workerd: a dynamic Worker per program (Worker Loader), over local HTTP',
  reps: REPS,
  async start() {
    const pkg = resolvePath('workerd/package.json');
    if (pkg === undefined) return 'not installed (npm i -D workerd)';
    const binary = (require('workerd') as { default: string }).default;
    const dir = mkdtempSync(join(tmpdir(), 'peers-workerd-'));
    const port = await freePort();
    writeFileSync(join(dir, 'parent.js'), PARENT_WORKER);
    writeFileSync(
      join(dir, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "parent", worker = .parent) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "parent") ],
);
const parent :Workerd.Worker = (
  modules = [ (name = "parent.js", esModule = embed "parent.js") ],
  compatibilityDate = "2025-06-01",
  compatibilityFlags = ["experimental", "enable_ctx_exports"],
  bindings = [ (name = "LOADER", workerLoader = ()) ],
);
`,
    );
    const child = spawn(binary, ['serve', join(dir, 'config.capnp'), '--experimental'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr = (stderr + String(chunk)).slice(-2000);
    });
    stopWorkerd = () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        if ((await fetch(`${url}/noop`)).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline || child.exitCode !== null) return `did not start: ${stderr.trim()}`;
      await sleep(50);
    }
    const noop = await measure(async () => Number(await (await fetch(`${url}/noop`)).text()), '', REPS);
    workerdHttp = quantile(noop, 0.5);
    return async (code) => {
      const response = await fetch(url, { method: 'POST', body: code });
      const text = await response.text();
      if (!response.ok)
        throw new Error(`workerd: ${response.status} ${text.slice(0, 300)} ${stderr.slice(-600)}`);
      return JSON.parse(text);
    };
  },
  async stop() {
    stopWorkerd?.();
  },
};
let workerdHttp: number | undefined;

// --- QuickJS ---------------------------------------------------------------------------------------
const quickjs: Contestant = {
  name: 'QuickJS (quickjs-emscripten): a new runtime + context per program, in process',
  reps: REPS,
  async start() {
    if (resolvePath('quickjs-emscripten') === undefined) return 'not installed (npm i -D quickjs-emscripten)';
    const { getQuickJS } = await import('quickjs-emscripten');
    const QuickJS = await getQuickJS();
    return async (code) => {
      const runtime = QuickJS.newRuntime();
      const vm = runtime.newContext();
      try {
        const tools = vm.newObject();
        const noop = vm.newFunction('noop', () => vm.null);
        vm.setProp(tools, 'noop', noop);
        vm.setProp(vm.global, 'tools', tools);
        noop.dispose();
        tools.dispose();
        const result = vm.evalCode(`(async () => {\n${code}\n})()`);
        const promise = vm.unwrapResult(result);
        runtime.executePendingJobs();
        const state = vm.getPromiseState(promise);
        promise.dispose();
        if (state.type !== 'fulfilled') throw new Error('QuickJS: the program did not settle');
        if (state.error !== undefined) throw new Error('QuickJS: the program failed');
        const value = vm.dump(state.value);
        state.value.dispose();
        return value;
      } finally {
        vm.dispose();
        runtime.dispose();
      }
    };
  },
};

// --- Deno ------------------------------------------------------------------------------------------
const deno: Contestant = {
  name: 'Deno: a cold `deno run` per program, no permissions',
  reps: PROCESS_REPS,
  async start() {
    const pkg = resolvePath(
      `@deno/${process.platform}-${process.arch === 'x64' ? 'x64' : process.arch}-glibc/package.json`,
    );
    if (pkg === undefined) return 'not installed (npm i -D deno; the binary comes as @deno/<platform>)';
    const binary = join(dirname(pkg), 'deno');
    const dir = mkdtempSync(join(tmpdir(), 'peers-deno-'));
    let n = 0;
    return async (code) => {
      const file = join(dir, `program-${++n}.ts`);
      writeFileSync(
        file,
        `const tools = { noop: async (_args: unknown) => null };\nconst value = await (async () => {\n${code}\n})();\nconsole.log(JSON.stringify(value));\n`,
      );
      return new Promise((resolve, reject) => {
        const child = spawn(binary, ['run', '--no-prompt', '--quiet', '--no-config', '--no-lock', file], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { DENO_DIR: join(dir, 'cache'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', PATH: '' },
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk) => {
          out += String(chunk);
        });
        child.stderr.on('data', (chunk) => {
          err += String(chunk);
        });
        child.on('error', reject);
        child.on('exit', (status) => {
          if (status === 0) resolve(JSON.parse(out));
          else reject(new Error(`deno exited ${status}: ${err.slice(0, 300)}`));
        });
      });
    };
  },
};

// --- run -------------------------------------------------------------------------------------------
const contestants = [ours, oursHost, workerd, quickjs, deno];
const results = new Map<string, Record<ProgramName, { median: number; p99: number }> | string>();
try {
  for (const contestant of contestants) {
    let runner: Runner | string;
    try {
      runner = await contestant.start();
    } catch (error) {
      runner = `could not start: ${String(error).slice(0, 300)}`;
    }
    if (typeof runner === 'string') {
      results.set(contestant.name, runner);
      continue;
    }
    const figures = {} as Record<ProgramName, { median: number; p99: number }>;
    try {
      for (const name of Object.keys(PROGRAMS) as ProgramName[]) {
        const samples = await measure(runner, PROGRAMS[name], contestant.reps);
        figures[name] = { median: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
      }
      results.set(contestant.name, figures);
    } catch (error) {
      results.set(contestant.name, `failed: ${String(error).slice(0, 600)}`);
    }
    await contestant.stop?.();
  }
} finally {
  for (const contestant of contestants) await contestant.stop?.();
  await isolates.close();
}

const reference = results.get(ours.name);
for (const name of Object.keys(PROGRAMS) as ProgramName[]) {
  console.log(`program "${name}": ${JSON.stringify(PROGRAMS[name])}`);
  for (const [who, figures] of results) {
    if (typeof figures === 'string') {
      console.log(`  ${who}: ${figures}`);
      continue;
    }
    const { median, p99 } = figures[name];
    const ratio =
      typeof reference === 'object' ? ` (×${(median / reference[name].median).toFixed(2)} ours)` : '';
    console.log(`  ${who}: median ${fmt(median)}, p99 ${fmt(p99)}${ratio}`);
  }
}
if (workerdHttp !== undefined)
  console.log(
    `workerd's HTTP round trip to a handler that does nothing (in its figures): median ${fmt(workerdHttp)}`,
  );
