// The floor of a program's sequential tool calls in the service's topology, with no work in it
// (bench/read-chain-floor.ts prints it alone; bench/http-latency.ts beside the 20-read row). A
// forked child (the isolate worker) sends a call over Node's IPC channel to this process (the
// service's main thread), which writes a frame to a unix socket served by a third process (sandboxd
// in the agent's container), reads its answer (1 KiB, as a read's), and sends it back to the child;
// the child's next call waits for it. Four process wake-ups a call, as a real read has; nothing
// else. What a real program of reads costs above this is the work of the pipeline, the worker and
// sandboxd, not the topology. Without the daemon (`daemon: false`) this process answers the child
// at once: the worker's round trips alone, two wake-ups a call.
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** argv[2] of the forked child: this module runs as the "worker" then. */
const WORKER = 'chain-floor-worker';

if (process.argv[2] === WORKER) {
  const calls = Number(process.argv[3]);
  let answered: (() => void) | undefined;
  const ask = (message: object) =>
    new Promise<void>((resolve) => {
      answered = resolve;
      process.send?.(message);
    });
  process.on('message', async (m: { t: string }) => {
    if (m.t === 'answer') return answered?.();
    for (let i = 0; i < calls; i++)
      await ask({ t: 'call', i, name: 'read', args: { file_path: 'bench.txt' } });
  });
}

export interface ChainFloor {
  /** One program: `calls` sequential relayed calls. */
  program(): Promise<void>;
  /** This process (the relay), the worker, the daemon (none without one). */
  readonly pids: readonly number[];
  stop(): void;
}

const ANSWER = 'x'.repeat(1024);

const forkWorker = (calls: number): ChildProcess =>
  fork(new URL(import.meta.url).pathname, [WORKER, String(calls)], { execArgv: [] });

/** Programs of `calls` calls on the worker: `answer` answers its current call; the last ends the program. */
function programsOn(worker: ChildProcess, calls: number) {
  let left = 0;
  let programDone: (() => void) | undefined;
  return {
    answer(text: string): void {
      worker.send({ t: 'answer', text });
      if (--left === 0) setImmediate(() => programDone?.());
    },
    program: () =>
      new Promise<void>((resolve) => {
        programDone = resolve;
        left = calls;
        worker.send({ t: 'go' });
      }),
  };
}

/** The worker answered by this process at once. */
function startWorkerOnly(calls: number): ChainFloor {
  const worker = forkWorker(calls);
  const programs = programsOn(worker, calls);
  worker.on('message', () => programs.answer(ANSWER));
  return {
    program: programs.program,
    pids: [process.pid, worker.pid as number],
    stop: () => void worker.kill(),
  };
}

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

export async function startChainFloor(calls = 20, options: { daemon?: boolean } = {}): Promise<ChainFloor> {
  if (options.daemon === false) return startWorkerOnly(calls);
  const socketPath = join(tmpdir(), `read-chain-${process.pid}-${Date.now()}.sock`);
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
  const worker = forkWorker(calls);
  const programs = programsOn(worker, calls);
  link.on('data', (d: Buffer) => programs.answer(d.toString('utf8', 0, 1100)));
  worker.on('message', (m) => link.write(JSON.stringify(m)));
  return {
    program: programs.program,
    pids: [process.pid, worker.pid as number, daemon.pid as number],
    stop() {
      worker.kill();
      daemon.kill();
      link.destroy();
      void Promise.all([exited(worker), exited(daemon)]).then(() => rmSync(socketPath, { force: true }));
    },
  };
}
