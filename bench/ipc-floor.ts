// The floor under a brokered call, measured in the bench's own run: a small JSON message to a child
// Node process and back over the same kind of IPC channel the isolate workers use (two process
// wake-ups and Node's IPC framing, nothing else).
// Run alone (`node bench/ipc-floor.ts`) it compares transports, alternated in the same run: Node's
// IPC channel with 'json' and with 'advanced' serialization, and a plain socket (an extra stdio
// pipe) carrying length-prefixed JSON frames; wall time per round trip and this process's CPU per
// round trip. Each hop costs the same syscalls whatever the framing (a write that wakes the peer;
// in the peer two epoll_waits, libuv's idle-time metrics polling once without blocking first, and
// one read), and on this kind of VM a syscall alone costs ~3-5 µs.
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';

export type Transport = 'json' | 'advanced' | 'frames';

const MESSAGE = { t: 'result', id: 1, callId: 0, envelope: '{"ok":true,"value":null}' };
const ECHO_IPC = "process.on('message', (m) => process.send(m))";
// Length-prefixed frames (4-byte little-endian length, UTF-8 JSON) over fd 3.
const FRAMES = `
const encode = (m) => { const t = JSON.stringify(m); const b = Buffer.allocUnsafe(4 + Buffer.byteLength(t)); b.writeUInt32LE(b.length - 4, 0); b.write(t, 4); return b; };
const reader = (on) => { let buf = null; return (chunk) => {
  buf = buf === null ? chunk : Buffer.concat([buf, chunk]);
  while (buf !== null && buf.length >= 4) {
    const len = buf.readUInt32LE(0);
    if (buf.length < 4 + len) break;
    const text = buf.toString('utf8', 4, 4 + len);
    buf = buf.length === 4 + len ? null : buf.subarray(4 + len);
    on(JSON.parse(text));
  }
}; };`;
const ECHO_FRAMES = `${FRAMES}
const s = new (require('node:net').Socket)({ fd: 3, readable: true, writable: true });
s.on('data', reader((m) => s.write(encode(m))));`;

interface Channel {
  child: ChildProcess;
  send(message: unknown): void;
  onMessage(handler: () => void): void;
}

const open = (transport: Transport): Channel => {
  if (transport === 'frames') {
    const child = spawn(process.execPath, ['-e', ECHO_FRAMES], {
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
    });
    const socket = child.stdio[3] as Socket;
    const { encode, reader } = new Function(`${FRAMES}; return { encode, reader };`)() as {
      encode(m: unknown): Buffer;
      reader(on: (m: unknown) => void): (chunk: Buffer) => void;
    };
    return {
      child,
      send: (m) => void socket.write(encode(m)),
      onMessage: (handler) => void socket.on('data', reader(handler)),
    };
  }
  const child = spawn(process.execPath, ['-e', ECHO_IPC], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    serialization: transport,
  });
  return { child, send: (m) => void child.send(m as object), onMessage: (h) => void child.on('message', h) };
};

/**
 * Median round trip in ms over `n` sequential messages (the first tenth dropped as warm-up), and
 * this process's CPU per round trip in ms.
 */
export async function ipcRoundTripWithCpu(n: number, transport: Transport = 'json') {
  const channel = open(transport);
  const samples: number[] = [];
  let cpu = { user: 0, system: 0 };
  await new Promise<void>((resolve) => {
    let sent = 0;
    let at = 0;
    let cpuFrom = process.cpuUsage();
    const next = () => {
      at = performance.now();
      channel.send({ ...MESSAGE, callId: ++sent });
    };
    channel.onMessage(() => {
      samples.push(performance.now() - at);
      if (samples.length === Math.floor(n / 10)) cpuFrom = process.cpuUsage();
      if (samples.length >= n) {
        cpu = process.cpuUsage(cpuFrom);
        resolve();
      } else next();
    });
    next();
  });
  channel.child.kill();
  const kept = samples.slice(Math.floor(n / 10)).sort((a, b) => a - b);
  return {
    median: kept[Math.floor(kept.length / 2)] as number,
    p90: kept[Math.floor(kept.length * 0.9)] as number,
    cpu: (cpu.user + cpu.system) / 1000 / kept.length,
  };
}

/** Median round trip in ms over `n` sequential messages on Node's IPC channel ('json'). */
export async function ipcRoundTrip(n: number): Promise<number> {
  return (await ipcRoundTripWithCpu(n, 'json')).median;
}

if (import.meta.main) {
  const rounds = Number(process.env.BENCH_RUNS ?? 5);
  const transports: Transport[] = ['json', 'advanced', 'frames'];
  const results = new Map<Transport, Array<{ median: number; p90: number; cpu: number }>>();
  for (let r = 0; r < rounds; r++)
    for (const t of transports)
      results.set(t, [...(results.get(t) ?? []), await ipcRoundTripWithCpu(2000, t)]);
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
  for (const t of transports) {
    const rs = results.get(t) ?? [];
    console.log(
      `${t.padEnd(8)} round trip median ${us(mid(rs.map((x) => x.median)))} (per round ${rs.map((x) => us(x.median)).join(', ')}), p90 ${us(mid(rs.map((x) => x.p90)))}, this process's CPU per round trip ${us(mid(rs.map((x) => x.cpu)))}`,
    );
  }
}
