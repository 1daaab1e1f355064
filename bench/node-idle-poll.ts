// Idle polling on a node agent (docs/nodes.md "Idle polling on the node", host/idle-poll.ts): two node
// agents on this engine, one with DSH_IDLE_POLL=on and one with off, each with a sandbox; the same
// relayed calls alternate between them in blocks, so both halves share the machine's minute. This
// process (the control plane's side, a remote node client) holds no request: a control plane on
// another machine, or one with polling off. Between blocks it waits past the linger, so the `off`
// agent's blocks run with nothing held (the kernel's target is read to check). Rows: bash `true`,
// read 1 KiB, 20 sequential reads. Prints p50 and p90 per row and agent.
// On one machine the request is every CPU's (PM QoS is system-wide): the `on` rows are what the
// node machine's hops gain plus what this side's would; on separate machines only the node's.
// Run: DSH_SANDBOX_IMAGE=<tag> node --no-node-snapshot bench/node-idle-poll.ts
// Env: BENCH_ROUNDS (blocks per row and agent; default 20), BENCH_BLOCK (calls a block; default 10).
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createDockerProvider, type DockerProvider, LABEL_INSTANCE } from '../host/sandbox/docker/index.ts';
import { connectRemoteNode } from '../host/sandbox/nodes/remote/client.ts';
import type { Sandbox } from '../host/sandbox/types.ts';
import { makeCa, makeCert, makeControlCert } from '../scripts/node-certs.ts';
import { startNodeAgent } from './lib/node-agent.ts';
import { benchImage, benchRunId, removeLabelled } from './lib/sweep.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 10);
const image = await benchImage();
const run = benchRunId();
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-node-poll-'));
const pki = join(dir, 'pki');
const modes = ['on', 'off'] as const;
type Mode = (typeof modes)[number];
const instanceOf = (mode: Mode): string => `np${mode}${run}`;
makeCa(pki);
makeCert(pki, pki, 'bench', ['127.0.0.1']);
makeControlCert(pki, pki, 'control', modes.map(instanceOf));
const pem = (name: string): string => readFileSync(join(pki, name), 'utf8');

const target = (): number | undefined => {
  try {
    const fd = openSync('/dev/cpu_dma_latency', 'r');
    const b = Buffer.alloc(4);
    readSync(fd, b, 0, 4, null);
    closeSync(fd);
    return b.readInt32LE(0);
  } catch {
    return undefined;
  }
};

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? Number.NaN;
};

/** A node agent on this engine with DSH_IDLE_POLL=`mode`; its URL once it serves. */
const startAgent = (mode: Mode) =>
  startNodeAgent(pki, join(dir, `node-${mode}`), image, { DSH_POOL_SIZE: '0', DSH_IDLE_POLL: mode });

const agents = { on: await startAgent('on'), off: await startAgent('off') };
const providers = {} as Record<Mode, DockerProvider>;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  for (const mode of modes)
    providers[mode] = createDockerProvider({
      image,
      instance: instanceOf(mode),
      idleMs: 0,
      node: await connectRemoteNode({
        name: 'bench', // the name its certificate gives (both agents serve one)
        url: agents[mode].url,
        instance: instanceOf(mode),
        cert: pem('control.pem'),
        key: pem('control.key'),
        ca: pem('ca.pem'),
      }),
    });
  const sandboxes = {} as Record<Mode, Sandbox>;
  for (const mode of modes) {
    sandboxes[mode] = await providers[mode].create({ agentId: 'bench', tenantId: 'bench' });
    await sandboxes[mode].fs.writeFile('f.txt', Buffer.alloc(1024, 'x'));
    await sandboxes[mode].exec('true');
  }
  console.log(
    `image ${image}; two node agents on loopback, this engine; blocks of ${BLOCK}, ${ROUNDS} rounds`,
  );
  const rows: Array<[string, (sb: Sandbox) => Promise<unknown>]> = [
    ['bash true', (sb) => sb.exec('true')],
    ['read 1 KiB', (sb) => sb.fs.readFile('f.txt')],
    [
      '20 sequential reads',
      async (sb) => {
        for (let i = 0; i < 20; i++) await sb.fs.readFile('f.txt');
      },
    ],
  ];
  let heldWhenOff = 0;
  let heldWhenOn = 0;
  for (const [what, call] of rows) {
    const times: Record<Mode, number[]> = { on: [], off: [] };
    for (let r = 0; r < ROUNDS; r++)
      for (const mode of r % 2 === 0 ? modes : ([...modes].reverse() as Mode[])) {
        await pause(50); // past the other agent's linger
        if (mode === 'off' && target() === 0) heldWhenOff++;
        for (let i = 0; i < BLOCK; i++) {
          const t = performance.now();
          await call(sandboxes[mode]);
          times[mode].push(performance.now() - t);
          if (mode === 'on' && i === 0 && target() === 0) heldWhenOn++;
        }
      }
    const f = (xs: number[]) => `${quantile(xs, 0.5).toFixed(2)} ms (p90 ${quantile(xs, 0.9).toFixed(2)})`;
    console.log(
      `${what.padEnd(20)} on ${f(times.on)}   off ${f(times.off)}   off/on ×${(quantile(times.off, 0.5) / quantile(times.on, 0.5)).toFixed(2)}`,
    );
  }
  console.log(
    `blocks of the on agent holding 0 µs after their first call: ${heldWhenOn} of ${rows.length * ROUNDS}; blocks of the off agent that began with a request held by some process: ${heldWhenOff}`,
  );
} finally {
  for (const mode of modes) {
    await providers[mode]?.destroy('bench').catch(() => {});
    await providers[mode]?.close();
    const stopped = new Promise((r) => agents[mode].child.once('exit', r));
    if (agents[mode].child.pid !== undefined) process.kill(agents[mode].child.pid, 'SIGTERM');
    await stopped;
    await removeLabelled(docker, `${LABEL_INSTANCE}=${instanceOf(mode)}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
