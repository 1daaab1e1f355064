// Sandbox provider benchmark: `node --no-node-snapshot bench/sandbox.ts` (image: DSH_SANDBOX_IMAGE,
// else the one setup builds). Every item is measured against raw dockerode in the same run:
// agent ready from the warm pool vs cold create vs a raw `docker create`+`start` (and a cold
// create's spare loop workspace vs mkfs on the path vs a Docker volume); `exec true` through sandboxd vs a raw Docker exec;
// read/write 1 KiB and 1 MiB through sandboxd vs raw exec `cat`; archive upload through sandboxd vs
// putArchive; grep over a small repo through sandboxd vs raw exec `rg`. Prints medians and ratios.
// Everything it makes is labelled dsh.bench=<run> and removed by that label at the end.

import { rmdir as rm, rm as rmAll } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import Docker from 'dockerode';
import { pack } from 'tar-stream';
import { loadConfig } from '../host/config.ts';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  loopUnavailable,
} from '../host/sandbox/docker/index.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { benchRunId, removeBenchResources } from './lib/sweep.ts';

const REPS = Number(process.argv[2] ?? 20);
const docker = new Docker();
const run = benchRunId();
const labels = { 'dsh.bench': run };
// The service's own workspaces (a loop-mounted file system each) where this machine can mount them.
const workspacesDir = join(tmpdir(), `dsh-bench-ws-${run}`);
const loop = (await loopUnavailable()) === undefined;
const workspaces = loop ? createLoopWorkspaces(workspacesDir) : createVolumeWorkspaces(new Docker());
const image =
  loadConfig().sandboxImage ?? (await (await import('../scripts/setup/image.ts')).ensureSandboxImage()).tag;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const time = async (n: number, fn: (i: number) => Promise<unknown>, warm = 2): Promise<number> => {
  for (let i = 0; i < warm; i++) await fn(-1 - i);
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    xs.push(performance.now() - t);
  }
  return median(xs);
};

/** Raw dockerode exec: create, hijacked start, demux, wait for end, inspect exit code. */
const rawExec = async (
  c: Docker.Container,
  cmd: string[],
  stdin?: Buffer,
): Promise<{ stdout: Buffer; exitCode: number | null }> => {
  const exec = await c.exec({
    Cmd: cmd,
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: stdin !== undefined,
    User: '1000:1000',
    WorkingDir: '/workspace',
  });
  const stream = await exec.start({ hijack: true, stdin: stdin !== undefined });
  const out = new PassThrough();
  const err = new PassThrough();
  docker.modem.demuxStream(stream, out, err);
  const chunks: Buffer[] = [];
  out.on('data', (b: Buffer) => chunks.push(b));
  err.resume();
  const ended = new Promise((r) => stream.on('end', r));
  if (stdin !== undefined) {
    stream.write(stdin);
    (stream as unknown as { end(): void }).end();
  }
  await ended;
  let info = await exec.inspect();
  while (info.Running) {
    await new Promise((r) => setTimeout(r, 5));
    info = await exec.inspect();
  }
  return { stdout: Buffer.concat(chunks), exitCode: info.ExitCode };
};

const tarOf = (name: string, body: Buffer): Readable => {
  const p = pack();
  p.entry({ name, mode: 0o644, uid: 1000, gid: 1000 }, body);
  p.finalize();
  return Readable.from(p);
};

const rows: Array<[string, number, number, string]> = [];
const row = (what: string, ours: number, raw: number, rawWhat: string): void => {
  rows.push([what, ours, raw, rawWhat]);
  console.log(
    `${what.padEnd(34)} ${ours.toFixed(2).padStart(9)} ms   ${rawWhat.padEnd(28)} ${raw.toFixed(2).padStart(9)} ms   ×${(raw / ours).toFixed(1)}`,
  );
};

const sweep = async (): Promise<void> => {
  await removeBenchResources(docker, run);
  await workspaces.sweep([], true);
  await rm(workspacesDir).catch(() => {});
  await rmAll(`${workspacesDir}-links`, { recursive: true, force: true });
};

try {
  console.log(`image ${image}, ${REPS} reps (medians; ×N = how many times faster than the raw way)\n`);
  // 1. Agent ready: warm pool vs cold create.
  /** A provider of this run's containers (instance `<run><suffix>`) that never stops one for idling. */
  const provider = (suffix: string, options: Partial<Parameters<typeof createDockerProvider>[0]> = {}) =>
    createDockerProvider({
      docker,
      image,
      labels,
      prefix: 'dshb',
      instance: `${run}${suffix}`,
      idleMs: 0,
      // Sessions over each container's link socket, as the service runs them.
      links: `${workspacesDir}-links`,
      ...options,
    });
  const pooled = provider('p', { pool: { size: 1 }, workspaces });
  // Cold creates as the service makes them (formatted workspaces made ahead), and without spares
  // (mkfs on the path), alternating in the same run; and on a Docker volume (no disk limit).
  const cold = provider('c', { workspaces, workspaceSpares: 2 });
  const coldMkfs = provider('m', { workspaces });
  const coldVolume = provider('v');
  // As the service starts them: adopt() first (after it, a pool hit asks the engine nothing).
  for (const provider of [pooled, cold, coldMkfs, coldVolume]) await provider.adopt();
  const readyReps = Math.max(3, Math.min(REPS, 6));
  const warmMs: number[] = [];
  const coldMs: number[] = [];
  const mkfsMs: number[] = [];
  const volumeMs: number[] = [];
  const rawMs: number[] = [];
  /** The floor of a cold create: a bare container of the same image, created and started. */
  const rawCreateStart = async (i: number) => {
    const t = performance.now();
    const c = await docker.createContainer({
      Image: image,
      name: `dshb-${run}-raw-${i}`,
      Entrypoint: ['sleep'],
      Cmd: ['infinity'],
      Labels: labels,
      HostConfig: { NetworkMode: 'none' },
    });
    await c.start();
    rawMs.push(performance.now() - t);
    await c.remove({ force: true });
  };
  const coldCreate = async (i: number) => {
    await workspaces.sparesFilled?.(`dshb-${run}c`);
    const t = performance.now();
    await cold.create({ tenantId: 'b', agentId: `cold${i}` });
    coldMs.push(performance.now() - t);
  };
  const mkfsCreate = async (i: number) => {
    const t = performance.now();
    await coldMkfs.create({ tenantId: 'b', agentId: `mkfs${i}` });
    mkfsMs.push(performance.now() - t);
  };
  for (let i = 0; i < readyReps; i++) {
    await pooled.pool.filled();
    let t = performance.now();
    await pooled.create({ tenantId: 'b', agentId: `warm${i}` });
    warmMs.push(performance.now() - t);
    // Each cold create on a machine not busy with this run's own refills; alternating the order.
    await pooled.pool.filled();
    if (i % 2) {
      await coldCreate(i);
      await mkfsCreate(i);
    } else {
      await mkfsCreate(i);
      await coldCreate(i);
    }
    await rawCreateStart(i);
    t = performance.now();
    await coldVolume.create({ tenantId: 'b', agentId: `vol${i}` });
    volumeMs.push(performance.now() - t);
  }
  row('agent ready (warm pool)', median(warmMs), median(coldMs), 'cold create+start+ready');
  console.log(
    `${'cold create + own workspace + ready'.padEnd(34)} ${median(coldMs).toFixed(2).padStart(9)} ms   ${'raw docker create+start'.padEnd(28)} ${median(rawMs).toFixed(2).padStart(9)} ms   +${(median(coldMs) - median(rawMs)).toFixed(1)} ms`,
  );
  const range = (xs: number[]): string => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)} ms`;
  console.log(
    `${''.padEnd(34)} cold ${range(coldMs)}; raw ${range(rawMs)}; per rep (cold - raw): ${coldMs.map((x, i) => (x - (rawMs[i] ?? 0)).toFixed(0)).join(', ')} ms`,
  );
  if (loop) {
    row('cold create, spare workspace', median(coldMs), median(mkfsMs), 'cold create, mkfs on the path');
    row(
      'cold create, 1 GiB loop workspace',
      median(coldMs),
      median(volumeMs),
      'cold create, Docker volume (no disk limit)',
    );
  }
  for (let i = 0; i < readyReps; i++) {
    await pooled.destroy(`warm${i}`);
    await cold.destroy(`cold${i}`);
    await coldMkfs.destroy(`mkfs${i}`);
    await coldVolume.destroy(`vol${i}`);
  }
  await pooled.close();
  await coldMkfs.close();
  await coldVolume.close();

  const sb: Sandbox = await cold.create({ tenantId: 'b', agentId: 'bench' });
  const c = docker.getContainer(sb.id);
  // 2. The smallest call: stat through sandboxd (one round trip) vs a raw exec of stat.
  row(
    'stat (sandboxd round trip)',
    await time(REPS, () => sb.fs.stat('.')),
    await time(REPS, () => rawExec(c, ['stat', '-c', '%s', '.'])),
    'raw exec stat',
  );
  // exec true.
  row(
    'exec true (sandboxd)',
    await time(REPS, () => sb.exec('true')),
    await time(REPS, () => rawExec(c, ['true'])),
    'raw docker exec',
  );
  // 3. write/read 1 KiB and 1 MiB.
  for (const [label, size] of [
    ['1 KiB', 1024],
    ['1 MiB', 1024 * 1024],
  ] as const) {
    const body = Buffer.alloc(size, 97);
    row(
      `write ${label} (sandboxd)`,
      await time(REPS, () => sb.fs.writeFile(`w-${size}`, body)),
      await time(REPS, () => rawExec(c, ['sh', '-c', `cat > raw-${size}`], body)),
      'raw exec cat > f',
    );
    row(
      `read ${label} (sandboxd)`,
      await time(REPS, () => sb.fs.readFile(`w-${size}`)),
      await time(REPS, () => rawExec(c, ['cat', `raw-${size}`])),
      'raw exec cat f',
    );
  }
  // 4. archive upload 1 KiB: validated tar written through sandboxd vs putArchive.
  const kib = Buffer.alloc(1024, 98);
  row(
    'upload tar 1 KiB (sandboxd)',
    await time(REPS, () => sb.archive.upload('up', tarOf('f.txt', kib))),
    await time(REPS, () =>
      c.putArchive(tarOf('f.txt', kib) as unknown as NodeJS.ReadableStream, { path: '/workspace' }),
    ),
    'raw putArchive',
  );
  // 5. grep over a small repo: 200 files in 20 directories.
  for (let d = 0; d < 20; d++)
    for (let f = 0; f < 10; f++)
      await sb.fs.writeFile(
        `repo/d${d}/f${f}.ts`,
        `export const x${f} = ${f};\n// TODO item ${d}-${f}\n`.repeat(20),
      );
  row(
    'grep TODO, 200 files (sandboxd)',
    await time(REPS, () => sb.fs.grep('TODO', { path: 'repo', limit: 10_000 })),
    await time(REPS, () => rawExec(c, ['rg', '-n', 'TODO', 'repo'])),
    'raw exec rg -n',
  );
  // 6. Download 16 MiB: 1 MiB ranged reads through sandboxd, one piece ahead of the consumer.
  await sb.exec('head -c 16777216 /dev/urandom > dl.bin');
  const downloadReps = Math.max(3, Math.min(REPS, 8));
  row(
    'download 16 MiB (sandboxd, streamed)',
    await time(downloadReps, async () => {
      const file = await sb.archive.downloadFile('dl.bin');
      let bytes = 0;
      for await (const piece of file.content) bytes += piece.length;
      if (bytes !== 16 << 20) throw new Error(`downloaded ${bytes} bytes`);
    }),
    await time(downloadReps, () => rawExec(c, ['cat', 'dl.bin'])),
    'raw exec cat',
  );
  await cold.destroy('bench');
  await cold.close();
} finally {
  await sweep();
}
