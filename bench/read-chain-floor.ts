// The floor of a program's sequential tool calls in the service's topology, with no work in it
// (issue 33's "20 sequential tools.read": is it the hops?). A forked child (the isolate worker)
// sends a call over Node's IPC channel to this process (the service's main thread), which writes a
// frame to a unix socket served by a third process (sandboxd in the agent's container), reads its
// answer (1 KiB, as a read's), and sends it back to the child; the child's next call waits for it.
// Four process wake-ups a call, as a real read has; nothing else. Prints p50/p90 of a "program" of
// CALLS such calls and each process's CPU a program. Compare with the 20-read row of
// bench/http-latency.ts: what lies above this floor is the work of the pipeline, the worker and
// sandboxd, not the topology.
// Run: node bench/read-chain-floor.ts   (BENCH_RUNS programs, default 300; BENCH_CALLS, default 20)
import { fork, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const RUNS = Number(process.env.BENCH_RUNS ?? 300);

if (process.argv[2] === 'worker') {
  let answered: (() => void) | undefined;
  const ask = (message: object) =>
    new Promise<void>((resolve) => {
      answered = resolve;
      process.send?.(message);
    });
  process.on('message', async (m: { t: string }) => {
    if (m.t === 'answer') return answered?.();
    for (let i = 0; i < CALLS; i++)
      await ask({ t: 'call', i, name: 'read', args: { file_path: 'bench.txt' } });
  });
} else {
  const socketPath = join(tmpdir(), `read-chain-${process.pid}.sock`);
  // The container's side: a Node process answering each frame with 1 KiB more (sandboxd is Node too).
  const daemon = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer((c) => c.on('data', (d) => c.write(Buffer.concat([d, Buffer.alloc(1024, 120)]))));
       s.listen(${JSON.stringify(socketPath)}, () => process.stdout.write('up\\n'));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => daemon.stdout?.once('data', resolve));
  const link = createConnection(socketPath);
  await new Promise((resolve) => link.once('connect', resolve));
  const worker = fork(new URL(import.meta.url).pathname, ['worker'], { execArgv: [] });
  let left = 0;
  let programDone: (() => void) | undefined;
  link.on('data', (d: Buffer) => {
    worker.send({ t: 'answer', text: d.toString('utf8', 0, 1100) });
    if (--left === 0) setImmediate(() => programDone?.());
  });
  worker.on('message', (m) => link.write(JSON.stringify(m)));
  const program = () =>
    new Promise<void>((resolve) => {
      programDone = resolve;
      left = CALLS;
      worker.send({ t: 'go' });
    });
  const cpuMs = (pid: number): number => {
    const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] as string).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
  };
  const pids = [process.pid, worker.pid as number, daemon.pid as number];
  for (let i = 0; i < 30; i++) await program();
  const before = pids.map(cpuMs);
  const walls: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await program();
    walls.push(performance.now() - started);
  }
  const used = pids.map((pid, i) => (cpuMs(pid) - (before[i] as number)) / RUNS);
  walls.sort((a, b) => a - b);
  const at = (q: number) => (walls[Math.floor(walls.length * q)] as number).toFixed(2);
  console.log(
    `read-chain-floor: ${RUNS} programs of ${CALLS} sequential relayed calls, no work in any process`,
  );
  console.log(
    `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms a program (${(Number(at(0.5)) / CALLS).toFixed(3)} ms a call)`,
  );
  console.log(
    `CPU a program: "service" ${used[0]?.toFixed(2)} ms, "worker" ${used[1]?.toFixed(2)} ms, "sandboxd" ${used[2]?.toFixed(2)} ms`,
  );
  worker.kill();
  daemon.kill();
  link.destroy();
  rmSync(socketPath, { force: true });
}
