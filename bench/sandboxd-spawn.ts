// Micro-benchmark inside a sandbox container: how long sandboxd takes to run `bash -c true` (start,
// exit, pipes closed) through the spawner vs child_process.spawn, interleaved in the same process,
// without the RPC or the host (row `static`: the spawner running Debian's bash-static in bash's
// stead, as exec does where the image has it); and, as the floor, python3 running it in a loop of
// its own (dynamically linked bash). The
// container runs as sandboxd's does (root with only CAP_SETUID and CAP_SETGID, no-new-privileges,
// apart from the agent: identity.ts runApart), so commands take the agent's ids as they do in a
// sandbox; each row also gives the container's CPU per call (the cgroup's cpuacct, all processes).
// BENCH_BASE=<git ref> adds a row `base`: the spawner program of that commit, interleaved with ours
// (A/B in one run). BENCH_RUNTIME=runsc runs the container under gVisor (the engine must offer it).
// `node --no-node-snapshot bench/sandboxd-spawn.ts [reps]` (image: DSH_SANDBOX_IMAGE, else the one
// setup builds). The container is labelled dsh.bench and removed.

import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { build } from 'esbuild';
import { loadConfig } from '../host/config.ts';

const REPS = Number(process.argv[2] ?? 50);
const docker = new Docker();
const image =
  loadConfig().sandboxImage ?? (await (await import('../scripts/setup/image.ts')).ensureSandboxImage()).tag;

const FLOOR = `
import json, subprocess, sys, time
xs = []
for i in range(int(sys.argv[1]) + 3):
    t = time.perf_counter()
    subprocess.run(['bash', '-c', 'true'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd='/workspace', user=1000, group=1000)
    xs.append((time.perf_counter() - t) * 1000)
print(json.dumps(xs[3:]))
`;
// The base's spawner program, beside ours for the bundle (its import of identity.ts redirected).
const BASE = process.env.BENCH_BASE;
const baseFile = `${import.meta.dirname}/.spawner-script-base.ts`;
if (BASE)
  writeFileSync(
    baseFile,
    execFileSync('git', ['show', `${BASE}:sandbox-image/sandboxd/spawner-script.ts`], {
      encoding: 'utf8',
    }).replaceAll("'./identity.ts'", "'../sandbox-image/sandboxd/identity.ts'"),
  );
// Runs in the container (Node 18): interleaves the two ways and prints one JSON line of samples.
const inner = `
import { execFileSync } from 'node:child_process';
const FLOOR = ${JSON.stringify(FLOOR)};
import { existsSync, readFileSync } from 'node:fs';
import { makeDropBox, runApart } from './sandbox-image/sandboxd/identity.ts';
import { launch, spawnWithNode } from './sandbox-image/sandboxd/launch.ts';
import { createSpawner } from './sandbox-image/sandboxd/spawner.ts';
${BASE ? "import { SPAWNER_SCRIPT as BASE_SCRIPT } from './bench/.spawner-script-base.ts';" : 'const BASE_SCRIPT = undefined;'}
const reps = Number(process.argv[process.argv.length - 1]);
const box = makeDropBox('/tmp/.sandboxd-fifos');
runApart('1000:1000', '1001');
const env = { PATH: process.env.PATH, HOME: '/home/agent', LANG: 'C.UTF-8' };
const req = { file: 'bash', args: ['-c', 'true'], cwd: '/workspace', env, stdin: false };
// As exec starts a command where the image has Debian's bash-static (exec.ts): argv[0] bash, the static binary run.
const staticBash = existsSync('/usr/bin/bash-static') ? { ...req, fasterFile: '/usr/bin/bash-static' } : undefined;
const run = async (p) => { const proc = await p; proc.stdout.resume(); proc.stderr.resume(); await proc.exited; await proc.closed; };
// The container's CPU so far (ns): every process in it, the kernel's work for them included.
const CG = ['/sys/fs/cgroup/cpuacct/cpuacct.usage', '/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage'];
const cpu = () => { for (const p of CG) { try { return Number(readFileSync(p, 'utf8')); } catch {} } try { const m = /usage_usec (\\d+)/.exec(readFileSync('/sys/fs/cgroup/cpu.stat', 'utf8')); return Number(m?.[1]) * 1000; } catch { return 0; } }; // 0: none to read (gVisor)
// A spawner that sandboxd gives up (not apart: the base's under gVisor) leaves its row out.
const ready = async (options) => { const sp = createSpawner({ ...(box ? { box } : {}), ...options }); sp.start(); while (sp.state !== 'ready' && sp.state !== 'off') await new Promise((r) => setTimeout(r, 10)); return sp.state === 'ready' ? sp : undefined; };
const spawner = await ready({});
if (!spawner) throw new Error('sandboxd gave our spawner up');
const base = BASE_SCRIPT ? await ready({ script: BASE_SCRIPT }) : undefined;
const out = { spawner: [], ...(staticBash ? { static: [] } : {}), ...(base ? { base: [] } : {}), node: [] };
const cpuOf = { spawner: 0, static: 0, base: 0, node: 0 };
// Of it: sandboxd's own (this process) and the spawner's (its /proc stat, in clock ticks of 10 ms:
// summed over every call, the ticks average out).
const own = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000; };
const ticks = (pid) => { try { const f = readFileSync('/proc/' + pid + '/stat', 'utf8'); const xs = f.slice(f.lastIndexOf(')') + 2).split(' '); return (Number(xs[11]) + Number(xs[12])) * 1e7; } catch { return 0; } };
const part = { spawner: { sandboxd: 0, spawner: 0 }, static: { sandboxd: 0, spawner: 0 }, base: { sandboxd: 0, spawner: 0 }, node: { sandboxd: 0, spawner: 0 } };
const one = async (p, sp) => { const c = cpu(); const o = own(); const k = ticks(sp?.pid); const t = performance.now(); await run(p()); return [performance.now() - t, cpu() - c, own() - o, ticks(sp?.pid) - k]; };
const ways = [['spawner', () => launch(req, spawner), spawner], ...(staticBash ? [['static', () => launch(staticBash, spawner), spawner]] : []), ...(base ? [['base', () => launch(req, base), base]] : []), ['node', () => spawnWithNode(req)]];
for (let i = 0; i < reps + 3; i++) {
  for (const [k, p, sp] of ways) {
    const [ms, ns, mine, its] = await one(p, sp);
    if (i >= 3) { out[k].push(ms); cpuOf[k] += ns; part[k].sandboxd += mine; part[k].spawner += its; }
  }
}
spawner.stop();
base?.stop();
// The floor: python3 itself starting the same command in a loop (no sandboxd, no messages).
const c0 = cpu();
// (Under gVisor its python cannot take the agent's ids, as the base's spawner cannot: no row.)
let floor;
try { floor = execFileSync('python3', ['-c', FLOOR, String(reps)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }); } catch {}
const floorCpu = cpu() - c0;
if (floor) out.python = JSON.parse(floor);
const ms = (ns) => ns / reps / 1e6;
const perCall = { spawner: ms(cpuOf.spawner), static: ms(cpuOf.static), base: ms(cpuOf.base), node: ms(cpuOf.node), python: floorCpu / (reps + 3) / 1e6 };
const both = (k) => 'sandboxd ' + ms(part[k].sandboxd).toFixed(2) + ', spawner ' + ms(part[k].spawner).toFixed(2);
const parts = { spawner: both('spawner'), static: both('static'), base: both('base'), node: 'sandboxd ' + ms(part.node.sandboxd).toFixed(2) };
console.log(JSON.stringify({ samples: out, cpu: perCall, parts }));
`;

const bundle = await build({
  stdin: { contents: inner, resolveDir: `${import.meta.dirname}/..`, loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node18',
  write: false,
  logLevel: 'silent',
}).finally(() => {
  if (BASE) rmSync(baseFile, { force: true });
});
const code = bundle.outputFiles[0]?.text ?? '';

const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] as number;
};

const c = await docker.createContainer({
  Image: image,
  Labels: { 'dsh.bench': 'spawn' },
  User: '0:0',
  Entrypoint: ['node', '--input-type=module', '-e', code, '--', String(REPS)],
  Cmd: [],
  NetworkDisabled: true,
  HostConfig: {
    ...(process.env.BENCH_RUNTIME ? { Runtime: process.env.BENCH_RUNTIME } : {}),
    NetworkMode: 'none',
    CapDrop: ['ALL'],
    CapAdd: ['SETUID', 'SETGID'],
    // Under gVisor, Docker's default seccomp profile refuses clone3 with EPERM, and Node cannot
    // start a thread (the service's own gVisor profile lets clone3 through: seccomp.ts).
    SecurityOpt: ['no-new-privileges', ...(process.env.BENCH_RUNTIME ? ['seccomp=unconfined'] : [])],
    Tmpfs: { '/workspace': 'rw,uid=1000,gid=1000' },
  },
});
try {
  const stream = await c.attach({ stream: true, stdout: true, stderr: true });
  const out = new PassThrough();
  const err = new PassThrough();
  let text = '';
  out.on('data', (b: Buffer) => {
    text += b.toString();
  });
  err.pipe(process.stderr);
  docker.modem.demuxStream(stream, out, err);
  await c.start();
  await c.wait();
  const r = JSON.parse(text.trim().split('\n').pop() ?? '{}') as {
    samples: Record<string, number[]>;
    cpu: Record<string, number>;
    parts: Record<string, string>;
  };
  console.log(
    `bash -c true inside the container, ${REPS} reps each, interleaved (ms: p10 / median / p90 | the container's CPU per call)`,
  );
  for (const [k, xs] of Object.entries(r.samples))
    console.log(
      `${k.padEnd(8)} ${[0.1, 0.5, 0.9].map((p) => q(xs, p).toFixed(2).padStart(7)).join(' /')} | ${(r.cpu[k] ?? 0).toFixed(2)} ms${r.parts[k] ? ` (${r.parts[k]})` : ''}`,
    );
} finally {
  await c.remove({ force: true }).catch(() => {});
}
