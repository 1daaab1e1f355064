// The node agent's splice alone (docs/nodes.md, "Speed"; no engine, no sandboxd): 64 MiB from a
// stand-in for sandboxd's link socket (a unix socket in a child process that writes the bytes on
// every connection) read three ways, alternated: straight from the unix socket (what the embedded
// node's control plane does), over TLS straight from the child (TLS alone: its encryption and
// records), and through a node agent (the real server.ts in another child, a fake node whose link
// is the unix socket: the unix socket read, the TLS socket written, the control plane's TLS read).
// Prints medians and the ratios against the unix socket read, so the 64 MiB download of
// bench/nodes.ts can be split into the hop and the TLS.
// Run: node --no-node-snapshot bench/node-splice.ts   Env: BENCH_REPS (default 5).
// Everything it makes (a temporary folder, two child processes) is removed at the end.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as netServer, connect as unixConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { connect as tlsConnect, createServer as tlsServer } from 'node:tls';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../host/sandbox/docker/config.ts';
import { connectRemoteNode } from '../host/sandbox/nodes/remote/client.ts';
import { serveNode } from '../host/sandbox/nodes/remote/server.ts';
import type { SandboxdPipe, SandboxNode } from '../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert } from '../scripts/node-certs.ts';

const MiB = 1024 * 1024;
const TOTAL = 64 * MiB;
const [, , role, dir] = process.argv;
const pem = (d: string, name: string): string => readFileSync(join(d, name), 'utf8');

/** Writes TOTAL bytes in 64 KiB chunks, minding backpressure, then ends. */
const pour = (socket: NodeJS.WritableStream & { once(e: 'drain', f: () => void): unknown }): void => {
  const chunk = Buffer.alloc(64 * 1024, 7);
  let sent = 0;
  const more = (): void => {
    while (sent < TOTAL) {
      sent += chunk.length;
      if (!socket.write(chunk)) {
        socket.once('drain', more);
        return;
      }
    }
    socket.end();
  };
  more();
};

/** The stand-in for sandboxd: a unix socket and a TLS port that pour TOTAL bytes on each connection. */
async function source(d: string): Promise<void> {
  netServer((s) => pour(s)).listen(join(d, 'link.sock'));
  const tls = tlsServer({ cert: pem(d, 'splice.pem'), key: pem(d, 'splice.key') }, (s) => pour(s));
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', () => r()));
  process.send?.({ port: (tls.address() as { port: number }).port });
}

/** A node agent whose every link is a new connection to the stand-in's unix socket. */
async function agent(d: string): Promise<void> {
  const pipeOf = (): Promise<SandboxdPipe> =>
    new Promise((resolve) => {
      const s = unixConnect(join(d, 'link.sock'), () =>
        resolve({
          input: s,
          output: s,
          closed: new Promise((r) => s.once('close', r)),
          close: () => s.destroy(),
        }),
      );
    });
  const quiet = new PassThrough();
  const fake = {
    name: 'splice',
    defaults: DOCKER_DEFAULT_LIMITS,
    maxima: DOCKER_DEFAULT_MAXIMA,
    pool: { ready: 0, filled: async () => {} },
    info: undefined,
    open: async () => ({
      input: quiet,
      output: new PassThrough(),
      closed: new Promise<void>(() => {}),
      close: () => {},
      link: async () => ({ token: 't'.repeat(64), accepted: pipeOf(), close: () => {} }),
    }),
  } as unknown as SandboxNode<unknown>;
  const server = await serveNode({
    host: '127.0.0.1',
    port: 0,
    cert: pem(d, 'splice.pem'),
    key: pem(d, 'splice.key'),
    ca: pem(d, 'ca.pem'),
    nodeFor: () => fake,
  });
  process.send?.({ port: server.port });
  // Its CPU so far, when asked (the bench splits the CPU of each way by process).
  process.on('message', () => process.send?.({ cpu: process.cpuUsage() }));
}

const child = (which: string, d: string): Promise<{ child: ChildProcess; port: number }> =>
  new Promise((resolve, reject) => {
    const c = fork(import.meta.filename, [which, d], { execArgv: ['--no-node-snapshot'] });
    c.once('message', (m: { port: number }) => resolve({ child: c, port: m.port }));
    c.once('exit', (code) => reject(new Error(`${which} exited (${code})`)));
  });

/** Milliseconds to read TOTAL bytes from `stream` (it ends, or it has them all). */
const drain = (stream: NodeJS.ReadableStream): Promise<number> =>
  new Promise((resolve, reject) => {
    const t = performance.now();
    let n = 0;
    stream.on('data', (c: Buffer) => {
      n += c.length;
      if (n >= TOTAL) resolve(performance.now() - t);
    });
    stream.once('end', () => (n >= TOTAL ? undefined : reject(new Error(`${n} bytes`))));
  });

async function main(): Promise<void> {
  const REPS = Number(process.env.BENCH_REPS ?? 5);
  const d = mkdtempSync(join(tmpdir(), 'dsh-bench-splice-'));
  makeCa(d);
  makeCert(d, d, 'splice', ['127.0.0.1']);
  makeControlCert(d, d, 'control', ['bench']);
  const src = await child('source', d);
  const node = await child('agent', d);
  try {
    const remote = await connectRemoteNode({
      name: 'splice',
      url: `https://127.0.0.1:${node.port}`,
      instance: 'bench',
      cert: pem(d, 'control.pem'),
      key: pem(d, 'control.key'),
      ca: pem(d, 'ca.pem'),
    });
    const ways: Record<string, () => Promise<number>> = {
      'unix socket': async () => {
        const s = unixConnect(join(d, 'link.sock'));
        const ms = await drain(s);
        s.destroy();
        return ms;
      },
      'TLS alone': async () => {
        const s = tlsConnect({ host: '127.0.0.1', port: src.port, ca: pem(d, 'ca.pem') });
        const ms = await drain(s);
        s.destroy();
        return ms;
      },
      'through the node': async () => {
        const channel = await remote.open('bench');
        const offer = await channel.link?.();
        const pipe = (await offer?.accepted) as SandboxdPipe;
        const ms = await drain(pipe.input);
        pipe.close();
        channel.close();
        return ms;
      },
    };
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((w) => [w, []]));
    // CPU in ms, this process's and the node agent's, summed over the reps of each way.
    const cpu: Record<string, { here: number; node: number }> = {};
    const agentCpu = (): Promise<number> =>
      new Promise((resolve) => {
        node.child.once('message', (m: { cpu: NodeJS.CpuUsage }) =>
          resolve((m.cpu.user + m.cpu.system) / 1000),
        );
        node.child.send('cpu');
      });
    for (let i = 0; i < REPS; i++)
      for (const [way, run] of Object.entries(ways)) {
        const [here, there] = [process.cpuUsage(), await agentCpu()];
        times[way]?.push(await run());
        const used = process.cpuUsage(here);
        const c = cpu[way] ?? { here: 0, node: 0 };
        cpu[way] = c;
        c.here += (used.user + used.system) / 1000;
        c.node += (await agentCpu()) - there;
      }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const base = median(times['unix socket'] ?? []);
    console.log(`64 MiB read ${REPS} times each, alternated; ×N against the unix socket`);
    for (const [way, xs] of Object.entries(times))
      console.log(
        `${way.padEnd(18)} ${median(xs).toFixed(0).padStart(6)} ms  ${((TOTAL / MiB / median(xs)) * 1000).toFixed(0).padStart(5)} MiB/s  ×${(median(xs) / base).toFixed(2)}` +
          `   CPU per 64 MiB: reader ${((cpu[way]?.here ?? 0) / REPS).toFixed(0)} ms, node agent ${((cpu[way]?.node ?? 0) / REPS).toFixed(0)} ms`,
      );
  } finally {
    src.child.kill();
    node.child.kill();
    rmSync(d, { recursive: true, force: true });
  }
}

if (role === 'source' && dir) await source(dir);
else if (role === 'agent' && dir) await agent(dir);
else await main();
