// Bulk transfer through the HTTP API against what a user would pick instead, in the same run:
// `GET|PUT /v1/agents/:id/files` of 16 MiB and 256 MiB (curl as the client, so the client's work
// is not the control plane's) vs `docker exec <c> cat f` / `docker exec -i <c> sh -c 'cat > f'` of
// the same bytes (the docker CLI); `GET|PUT /archive` (tar) of the 256 MiB file; the control
// plane's RSS growth during a 256 MiB transfer (it must not scale with the size); and a small call
// on the same sandbox (`POST /calls` with a `read` of a small file) while a 256 MiB download runs
// vs idle. Prints medians, ratios (×N: how many times the baseline's time ours takes; ≤ 1 is as
// fast or faster) and a sha256 check of one round trip.
// Run: DSH_SANDBOX_IMAGE=<tag> node --no-node-snapshot bench/transfer.ts  (`npm run bench transfer`)
// Env: BENCH_REPS (16 MiB reps, default 5), BENCH_BIG_REPS (256 MiB reps, default 3).
// Everything it makes is labelled dsh.bench=<run> and removed by that label at the end.

import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Docker from 'dockerode';
import { loadConfig } from '../host/config.ts';
import { createDockerProvider } from '../host/sandbox/docker/index.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';
import { noIsolates } from './lib/no-isolates.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';

const MiB = 1024 * 1024;
const REPS = Number(process.env.BENCH_REPS ?? 5);
const BIG_REPS = Number(process.env.BENCH_BIG_REPS ?? 3);
const image = await benchImage();
const run = benchRunId();
const docker = new Docker();

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] as number;
};

/** Runs a command to its end; resolves with its stdout (when `capture`) and wall time. */
const sh = (cmd: string, args: string[], opts: { stdin?: string; capture?: boolean } = {}) =>
  new Promise<{ ms: number; out: string }>((resolve, reject) => {
    const t = performance.now();
    const child = spawn(cmd, args, { stdio: ['pipe', opts.capture ? 'pipe' : 'ignore', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
    });
    if (opts.stdin && child.stdin) createReadStream(opts.stdin).pipe(child.stdin);
    else child.stdin?.end();
    child.on('close', (code) =>
      code === 0
        ? resolve({ ms: performance.now() - t, out })
        : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err.slice(0, 300)}`)),
    );
  });

const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-transfer-'));
const store = openStore({ dataDir });
// Sessions over each container's link socket, as the service runs them (BENCH_LINKS=0: the attach stream).
const overAttach = process.env.BENCH_LINKS === '0';
const provider = createDockerProvider({
  image,
  prefix: 'dshbench',
  instance: `t${run}`,
  labels: { 'dsh.bench': run },
  idleMs: 0,
  ...(overAttach ? {} : { links: join(dataDir, 'links') }),
});
console.log(`sessions over ${overAttach ? 'the attach stream (BENCH_LINKS=0)' : 'link sockets'}`);
const config = loadConfig(
  { host: '127.0.0.1', port: 0, dataDir, tenantConcurrency: 1000, maxUploadBytes: 1024 * MiB },
  {},
);
const server = await startServer(config, { sandboxes: provider, isolates: noIsolates, store, log: () => {} });

// RSS of this process (the control plane), sampled every 10 ms.
let rssPeak = 0;
const sampler = setInterval(() => {
  rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
}, 10);
// A full collection before each measurement, so that garbage of the previous one does not count.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const growthDuring = async (fn: () => Promise<unknown>): Promise<number> => {
  gc();
  const before = process.memoryUsage.rss();
  rssPeak = before;
  await fn();
  return (Math.max(rssPeak, process.memoryUsage.rss()) - before) / MiB;
};

try {
  const { apiKey } = await store.tenants.createTenant('bench');
  const auth = `Authorization: Bearer ${apiKey}`;
  const created = await fetch(`${server.url}/v1/agents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: '{}',
  });
  const agent = ((await created.json()) as { id: string }).id;
  const url = (route: string, path: string) => `${server.url}/v1/agents/${agent}/${route}?path=${path}`;
  const callsUrl = `${server.url}/v1/agents/${agent}/calls`;
  const smallCall = async (): Promise<number> => {
    const t = performance.now();
    const r = await fetch(callsUrl, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ calls: [{ id: 'r', name: 'read', arguments: { file_path: 'small.txt' } }] }),
    });
    const json = (await r.json()) as { results: { ok: boolean }[] };
    if (!json.results[0]?.ok) throw new Error(`small call failed: ${JSON.stringify(json)}`);
    return performance.now() - t;
  };
  // The agent's container (the baseline execs into it) and the files, written by the agent itself.
  await smallCall().catch(() => undefined); // makes the sandbox
  const [info] = await docker.listContainers({ filters: { label: [`dsh.bench=${run}`] } });
  if (!info) throw new Error('no sandbox container');
  const container = info.Id;
  const dexec = (args: string[], stdin?: string) =>
    sh(
      'docker',
      ['exec', ...(stdin ? ['-i'] : []), '-u', '1000:1000', '-w', '/workspace', container, ...args],
      {
        ...(stdin ? { stdin } : {}),
      },
    );
  await dexec([
    'sh',
    '-c',
    `printf small > small.txt; head -c ${16 * MiB} /dev/urandom > f16; head -c ${256 * MiB} /dev/urandom > f256`,
  ]);
  const local = (size: number): string => {
    const path = join(dataDir, `up${size}`);
    const fd = openSync(path, 'w');
    for (let at = 0; at < size; at += 4 * MiB) writeSync(fd, randomBytes(Math.min(4 * MiB, size - at)));
    closeSync(fd);
    return path;
  };
  const up = { 16: local(16 * MiB), 256: local(256 * MiB) };
  const curl = (args: string[]) => sh('curl', ['-sS', '--fail', '-H', auth, ...args], { capture: true });

  console.log(
    `image ${image}; medians of ${REPS} (16 MiB) and ${BIG_REPS} (256 MiB) reps; ×N = ours / baseline\n`,
  );
  const line = (what: string, ours: number, base: number, baseWhat: string, mb: number): void =>
    console.log(
      `${what.padEnd(30)} ${ours.toFixed(0).padStart(6)} ms (${((mb / ours) * 1000).toFixed(0).padStart(4)} MiB/s)   ${baseWhat.padEnd(34)} ${base.toFixed(0).padStart(6)} ms (${((mb / base) * 1000).toFixed(0).padStart(4)} MiB/s)   ×${(ours / base).toFixed(2)}`,
    );
  const times = async (n: number, fn: () => Promise<{ ms: number }>): Promise<number> => {
    await fn(); // warm
    const xs: number[] = [];
    for (let i = 0; i < n; i++) xs.push((await fn()).ms);
    return median(xs);
  };

  for (const mb of [16, 256] as const) {
    const n = mb === 16 ? REPS : BIG_REPS;
    const file = `f${mb}`;
    // Alternate ours and the baseline so that load on this shared machine hits both alike.
    const downOurs: number[] = [];
    const downBase: number[] = [];
    const upOurs: number[] = [];
    const upBase: number[] = [];
    await curl(['-o', '/dev/null', url('files', file)]);
    for (let i = 0; i < n; i++) {
      downOurs.push((await curl(['-o', '/dev/null', url('files', file)])).ms);
      downBase.push((await dexec(['cat', file])).ms);
      upOurs.push((await curl(['-T', up[mb], '-X', 'PUT', url('files', `u${mb}`)])).ms);
      upBase.push((await dexec(['sh', '-c', `cat > t${mb}`], up[mb])).ms);
    }
    line(`download ${mb} MiB (GET /files)`, median(downOurs), median(downBase), 'docker exec cat f', mb);
    line(
      `upload ${mb} MiB (PUT /files)`,
      median(upOurs),
      median(upBase),
      "docker exec -i sh -c 'cat > f'",
      mb,
    );
  }
  // Archives of the 256 MiB file (tar): a directory holding it.
  await dexec(['sh', '-c', 'mkdir -p tree tarx && ln -f f256 tree/f256']);
  const tarPath = join(dataDir, 'tree.tar');
  const tarDown = await times(BIG_REPS, () => curl(['-o', tarPath, url('archive', 'tree')]));
  const tarUp = await times(BIG_REPS, () =>
    curl(['-T', tarPath, '-X', 'PUT', '-H', 'Content-Type: application/x-tar', url('archive', 'tree2')]),
  );
  const tarBase = await times(BIG_REPS, () => dexec(['tar', '-cf', '-', 'tree']));
  const tarBaseUp = await times(BIG_REPS, () => dexec(['tar', '-xf', '-', '-C', 'tarx'], tarPath));
  line('download 256 MiB (GET /archive)', tarDown, tarBase, 'docker exec tar -cf - dir', 256);
  line('upload 256 MiB (PUT /archive)', tarUp, tarBaseUp, 'docker exec -i tar -xf -', 256);

  // Byte-exact: what came back through the API is what the agent wrote.
  const viaApi = await sh(
    'sh',
    ['-c', `curl -sS --fail -H '${auth}' '${url('files', 'f256')}' | sha256sum`],
    {
      capture: true,
    },
  );
  const inBox = await sh('docker', ['exec', container, 'sha256sum', '/workspace/f256'], { capture: true });
  const ok = viaApi.out.split(' ')[0] === inBox.out.split(' ')[0];
  const upSha = createHash('sha256');
  for await (const chunk of createReadStream(up[256])) upSha.update(chunk as Buffer);
  const upBack = await sh('docker', ['exec', container, 'sha256sum', '/workspace/u256'], { capture: true });
  const upOk = upBack.out.split(' ')[0] === upSha.digest('hex');
  console.log(
    `\nsha256 of 256 MiB down / up through the API: ${ok ? 'equal' : 'DIFFERENT'} / ${upOk ? 'equal' : 'DIFFERENT'}`,
  );

  // Memory: the control plane's RSS growth while it moves 256 MiB, each way (and 16 MiB for scale).
  const g16 = await growthDuring(() => curl(['-o', '/dev/null', url('files', 'f16')]));
  const g256 = await growthDuring(() => curl(['-o', '/dev/null', url('files', 'f256')]));
  const u16 = await growthDuring(() => curl(['-T', up[16], '-X', 'PUT', url('files', 'u16')]));
  const u256 = await growthDuring(() => curl(['-T', up[256], '-X', 'PUT', url('files', 'u256')]));
  console.log(
    `control-plane RSS growth: download 16 MiB +${g16.toFixed(1)} MiB, 256 MiB +${g256.toFixed(1)} MiB; upload 16 MiB +${u16.toFixed(1)} MiB, 256 MiB +${u256.toFixed(1)} MiB`,
  );

  // A small call on the same sandbox while a 256 MiB download runs (a slow-ish client: curl at full speed).
  const idle: number[] = [];
  for (let i = 0; i < 30; i++) idle.push(await smallCall());
  const busy: number[] = [];
  let done = false;
  const download = curl(['-o', '/dev/null', url('files', 'f256')]).finally(() => {
    done = true;
  });
  await new Promise((r) => setTimeout(r, 100));
  while (!done) busy.push(await smallCall());
  await download;
  console.log(
    `small call (POST /calls, read of a small file) on the same sandbox: idle median ${median(idle).toFixed(1)} ms p90 ${pct(idle, 90).toFixed(1)} ms; during a 256 MiB download median ${median(busy).toFixed(1)} ms p90 ${pct(busy, 90).toFixed(1)} ms max ${Math.max(...busy).toFixed(1)} ms (${busy.length} calls)`,
  );
} finally {
  clearInterval(sampler);
  await server.close();
  await provider.close();
  store.close();
  await removeBenchResources(docker, run);
  rmSync(dataDir, { recursive: true, force: true });
}
