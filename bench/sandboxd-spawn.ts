// Micro-benchmark inside a sandbox container: how long sandboxd takes to run `bash -c true` (start,
// exit, pipes closed) through the spawner vs child_process.spawn, interleaved in the same process,
// without the RPC or the host; and, as the floor, python3 running it in a loop of its own.
// `node --no-node-snapshot bench/sandboxd-spawn.ts [reps]` (image: DSH_SANDBOX_IMAGE, else the one
// setup builds). The container is labelled dsh.bench and removed.

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
    subprocess.run(['bash', '-c', 'true'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd='/workspace')
    xs.append((time.perf_counter() - t) * 1000)
print(json.dumps(xs[3:]))
`;
// Runs in the container (Node 18): interleaves the two ways and prints one JSON line of samples.
const inner = `
import { execFileSync } from 'node:child_process';
const FLOOR = ${JSON.stringify(FLOOR)};
import { launch, spawnWithNode } from './sandbox-image/sandboxd/launch.ts';
import { createSpawner } from './sandbox-image/sandboxd/spawner.ts';
const reps = Number(process.argv[process.argv.length - 1]);
const req = { file: 'bash', args: ['-c', 'true'], cwd: '/workspace', env: process.env, stdin: false };
const run = async (p) => { const proc = await p; proc.stdout.resume(); proc.stderr.resume(); await proc.exited; await proc.closed; };
const spawner = createSpawner();
spawner.start();
while (spawner.state !== 'ready') await new Promise((r) => setTimeout(r, 10));
const out = { spawner: [], node: [] };
for (let i = 0; i < reps + 3; i++) {
  let t = performance.now();
  await run(launch(req, spawner));
  if (i >= 3) out.spawner.push(performance.now() - t);
  t = performance.now();
  await run(spawnWithNode(req));
  if (i >= 3) out.node.push(performance.now() - t);
}
spawner.stop();
// The floor: python3 itself starting the same command in a loop (no sandboxd, no messages).
const floor = execFileSync('python3', ['-c', FLOOR, String(reps)], { encoding: 'utf8' });
out.python = JSON.parse(floor);
console.log(JSON.stringify(out));
`;

const bundle = await build({
  stdin: { contents: inner, resolveDir: `${import.meta.dirname}/..`, loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node18',
  write: false,
  logLevel: 'silent',
});
const code = bundle.outputFiles[0]?.text ?? '';

const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] as number;
};

const c = await docker.createContainer({
  Image: image,
  Labels: { 'dsh.bench': 'spawn' },
  User: '1000:1000',
  Entrypoint: ['node', '--input-type=module', '-e', code, '--', String(REPS)],
  Cmd: [],
  NetworkDisabled: true,
  HostConfig: { NetworkMode: 'none', Tmpfs: { '/workspace': 'rw,uid=1000,gid=1000' } },
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
  const r = JSON.parse(text.trim().split('\n').pop() ?? '{}') as Record<string, number[]>;
  console.log(`bash -c true inside the container, ${REPS} reps each, interleaved (ms: p10 / median / p90)`);
  for (const [k, xs] of Object.entries(r))
    console.log(`${k.padEnd(8)} ${[0.1, 0.5, 0.9].map((p) => q(xs, p).toFixed(2).padStart(7)).join(' /')}`);
} finally {
  await c.remove({ force: true }).catch(() => {});
}
