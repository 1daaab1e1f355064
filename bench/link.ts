// Sandbox links (host/sandbox/docker/session.ts): the same calls on two sandboxes of one run, one
// whose session runs over its link socket (as the service runs them) and one over the engine's
// attach stream (the baseline: dockerd and containerd-shim between the control plane and
// sandboxd), alternated call by call; and the CPU dockerd and containerd-shim spend meanwhile.
// Prints medians and p90 per call and the ratio link / attach.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createDockerProvider } from '../host/sandbox/docker/index.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';

const REPS = Number(process.env.BENCH_REPS ?? 5) * 60;
const image = await benchImage();
const run = benchRunId();
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-link-'));

const provider = (suffix: string, links?: string) =>
  createDockerProvider({
    docker,
    image,
    prefix: 'dshbench',
    instance: `l${run}${suffix}`,
    labels: { 'dsh.bench': run },
    idleMs: 0,
    ...(links === undefined ? {} : { links }),
  });

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? Number.NaN;
};

/** CPU seconds (user + system) of every process whose command name is one of `names`. */
const cpuOf = (names: string[]): number => {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!names.includes(name)) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended
    }
  }
  return ticks / 100;
};
/** The engine's processes (comm is cut at 15 characters: every shim reads `containerd-shim`). */
const ENGINE = ['dockerd', 'containerd', 'containerd-shim'];

const linked = provider('l', join(dir, 'links'));
const attached = provider('a');
try {
  const sandboxes: Array<[string, Sandbox]> = [
    ['link', await linked.create({ agentId: 'bench', tenantId: 'bench' })],
    ['attach', await attached.create({ agentId: 'bench', tenantId: 'bench' })],
  ];
  const small = Buffer.alloc(1024, 'x');
  for (const [, sb] of sandboxes) await sb.fs.writeFile('f.txt', small);
  const calls: Array<[string, (sb: Sandbox) => Promise<unknown>, number]> = [
    ['read 1 KiB', (sb) => sb.fs.readFile('f.txt'), 1],
    ['stat', (sb) => sb.fs.stat('f.txt'), 1],
    ['write 1 KiB', (sb) => sb.fs.writeFile('g.txt', small), 1],
    ['exec true', (sb) => sb.exec('true'), 5],
  ];
  console.log(`image ${image}; ${REPS} of each small call per sandbox, alternated; ×N = link / attach\n`);
  for (const [what, call, every] of calls) {
    const times: Record<string, number[]> = { link: [], attach: [] };
    for (let i = 0; i < REPS / every; i++)
      for (const [name, sb] of sandboxes) {
        const t = performance.now();
        await call(sb);
        times[name]?.push(performance.now() - t);
      }
    // The engine's CPU per call, each way in a block of its own (/proc ticks are 10 ms).
    const cpu: Record<string, number> = {};
    for (const [name, sb] of sandboxes) {
      const c0 = cpuOf(ENGINE);
      for (let i = 0; i < REPS / every; i++) await call(sb);
      cpu[name] = ((cpuOf(ENGINE) - c0) / (REPS / every)) * 1e3;
    }
    const [l, a] = [times.link ?? [], times.attach ?? []];
    const ms = (xs: number[], q: number) => quantile(xs, q).toFixed(2).padStart(6);
    console.log(
      `${what.padEnd(12)} link ${ms(l, 0.5)} ms (p90 ${ms(l, 0.9)})   attach ${ms(a, 0.5)} ms (p90 ${ms(a, 0.9)})   ×${(quantile(l, 0.5) / quantile(a, 0.5)).toFixed(2)}   dockerd+containerd CPU per call: link ${(cpu.link ?? 0).toFixed(2)} ms, attach ${(cpu.attach ?? 0).toFixed(2)} ms`,
    );
  }
} finally {
  await linked.close();
  await attached.close();
  await removeBenchResources(docker, run);
  rmSync(dir, { recursive: true, force: true });
}
