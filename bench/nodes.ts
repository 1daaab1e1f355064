// Nodes (docs/nodes.md): the same calls on two sandboxes of one run, one on the embedded node (the
// control plane's own process, as `npm start` runs) and one on a remote node (a node agent,
// `host/cli.ts node`, on loopback with mutual TLS, on the same engine so that only the node
// protocol differs), alternated call by call: an agent ready from the node's warm pool, bash
// `true`, read 1 KiB, a 64 MiB download. Prints medians and p90 per call and the ratio remote /
// embedded (×N: how many times the embedded node's time the remote one takes).
// Run: DSH_SANDBOX_IMAGE=<tag> node --no-node-snapshot bench/nodes.ts
// Env: BENCH_REPS (small calls: ×60, pool readies: ×1, downloads: ×1; default 5).
// Everything it makes belongs to this run's instances and is removed at the end.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createDockerProvider, type DockerProvider, LABEL_INSTANCE } from '../host/sandbox/docker/index.ts';
import { connectRemoteNode } from '../host/sandbox/nodes/remote/client.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { makeCa, makeCert, makeControlCert } from '../scripts/node-certs.ts';
import { startNodeAgent } from './lib/node-agent.ts';
import { benchImage, benchRunId, removeLabelled } from './lib/sweep.ts';

const REPS = Number(process.env.BENCH_REPS ?? 5);
const MiB = 1024 * 1024;
const image = await benchImage();
const run = benchRunId();
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-nodes-'));
const pki = join(dir, 'pki');
makeCa(pki);
makeCert(pki, pki, 'bench', ['127.0.0.1']);
makeControlCert(pki, pki, 'control', [`nr${run}`]); // the remote instance below
const pem = (name: string): string => readFileSync(join(pki, name), 'utf8');

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? Number.NaN;
};

/** The node agent on this engine; its URL once it serves. */
const startAgent = () => startNodeAgent(pki, join(dir, 'node'), image, { DSH_POOL_SIZE: '1' });

const agent = await startAgent();
const instances = { embedded: `ne${run}`, remote: `nr${run}` };
const providers: Record<string, DockerProvider> = {
  embedded: createDockerProvider({
    docker,
    image,
    instance: instances.embedded,
    idleMs: 0,
    pool: { size: 1 },
    links: join(dir, 'links'),
  }),
  remote: createDockerProvider({
    image,
    instance: instances.remote,
    idleMs: 0,
    node: await connectRemoteNode({
      name: 'bench',
      url: agent.url,
      instance: instances.remote,
      cert: pem('control.pem'),
      key: pem('control.key'),
      ca: pem('ca.pem'),
    }),
  }),
};
const names = ['embedded', 'remote'] as const;
const ms = (xs: number[], q: number): string => quantile(xs, q).toFixed(2).padStart(7);
const line = (what: string, t: Record<string, number[]>): void => {
  const [e, r] = [t.embedded ?? [], t.remote ?? []];
  console.log(
    `${what.padEnd(22)} embedded ${ms(e, 0.5)} ms (p90 ${ms(e, 0.9)})   remote ${ms(r, 0.5)} ms (p90 ${ms(r, 0.9)})   ×${(quantile(r, 0.5) / quantile(e, 0.5)).toFixed(2)}`,
  );
};

try {
  console.log(`image ${image}; remote node on loopback (mutual TLS), same engine; ×N = remote / embedded\n`);
  // Ready from the pool: each create takes the pooled sandbox; the pool is refilled before the next.
  const ready: Record<string, number[]> = { embedded: [], remote: [] };
  for (let i = 0; i < REPS; i++)
    for (const name of names) {
      const p = providers[name] as DockerProvider;
      await p.pool.filled();
      const t = performance.now();
      await p.create({ agentId: `pool${i}`, tenantId: 'bench' });
      ready[name]?.push(performance.now() - t);
      await p.destroy(`pool${i}`);
    }
  line('ready from the pool', ready);

  const sandboxes: Array<[string, Sandbox]> = [];
  for (const name of names)
    sandboxes.push([
      name,
      await (providers[name] as DockerProvider).create({ agentId: 'bench', tenantId: 'bench' }),
    ]);
  const small = Buffer.alloc(1024, 'x');
  for (const [, sb] of sandboxes) {
    await sb.fs.writeFile('f.txt', small);
    await sb.exec('head -c 67108864 /dev/urandom > big.bin');
  }
  const calls: Array<[string, (sb: Sandbox) => Promise<unknown>, number]> = [
    ['bash true', (sb) => sb.exec('true'), REPS * 12],
    ['read 1 KiB', (sb) => sb.fs.readFile('f.txt'), REPS * 60],
    [
      'download 64 MiB',
      async (sb) => {
        let n = 0;
        for await (const c of (await sb.archive.downloadFile('big.bin')).content) n += c.length;
        if (n !== 64 * MiB) throw new Error(`downloaded ${n} bytes`);
      },
      REPS,
    ],
  ];
  for (const [what, call, reps] of calls) {
    const times: Record<string, number[]> = { embedded: [], remote: [] };
    for (let i = 0; i < reps; i++)
      for (const [name, sb] of sandboxes) {
        const t = performance.now();
        await call(sb);
        times[name]?.push(performance.now() - t);
      }
    line(what, times);
  }
} finally {
  for (const name of names) {
    await (providers[name] as DockerProvider).destroy('bench').catch(() => {});
    await (providers[name] as DockerProvider).close();
  }
  const stopped = new Promise((r) => agent.child.once('exit', r));
  if (agent.child.pid !== undefined) process.kill(agent.child.pid, 'SIGTERM');
  await stopped;
  for (const instance of Object.values(instances)) {
    await removeLabelled(docker, `${LABEL_INSTANCE}=${instance}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
