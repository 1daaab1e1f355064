// What the spawner says, read: `ready` (its hello, checked by reading its probe FIFO through our
// own open), `got` (it read a request), `spawned` (a command's pid and FIFO names: opened here and
// handed out as sockets), `exit` (a command's status) and spawn failures.
// Invariants: nothing the spawner sends can throw out of here; a spawner that does not run apart
// from the agent the way sandboxd does (real and saved uid 0, effective the agent's; real and saved
// gid the servers', effective the agent's; no supplementary group), when sandboxd
// does, is given up before any use: it gives its commands its own effective ids (gVisor's execve,
// runsc 20221219, hands a process whose real uid is 0 its real ids back: the spawner then takes
// the split again itself from the agent's ids sandboxd names, spawner-script.ts apart_again; one
// that could not would start commands as root, so it is given up and commands start through
// setpriv: launch.ts); a malformed answer
// rejects its request and gives up on the spawner; a command whose pipes cannot be opened is
// killed with its group and its request rejected; the spawner is told to `release` every FIFO it
// reported.
import { closeSync, constants, readSync } from 'node:fs';
import { Socket } from 'node:net';
import { WireError } from '../../sandbox-wire/errors.ts';
import { agentIds, notApart, procIdsOf, serverGid } from './identity.ts';
import {
  giveUp,
  isFifo,
  isPid,
  type Message,
  openFifo,
  type Pending,
  type SpawnerState,
  write,
} from './spawner-state.ts';
import type { Exit } from './spawner-types.ts';
import { startWatchdog } from './spawner-watch.ts';

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

export function onMessage(s: SpawnerState, m: Message): void {
  if (m.t === 'ready') {
    if (s.state === 'starting') onReady(s, m);
    return;
  }
  const id = m.id as number;
  if (m.t === 'got') {
    const p = s.pending.get(id);
    if (p) p.got = true;
    return;
  }
  if (m.t === 'exit') {
    const r = s.running.get(id);
    s.running.delete(id);
    if (r) s.unreaped.delete(r.pid);
    r?.resolve({
      code: Number.isInteger(m.code) ? (m.code as number) : null,
      signal: typeof m.signal === 'string' ? m.signal : null,
    });
    return;
  }
  const p = s.pending.get(id);
  if (!p) return;
  s.pending.delete(id);
  clearTimeout(p.timer);
  if (m.t === 'spawned') {
    onSpawned(s, m, p);
    return;
  }
  const code = typeof m.code === 'string' ? m.code : 'ESPAWN';
  const error = Object.assign(new Error(`spawn ${p.req.file} ${code}: ${String(m.message).slice(0, 500)}`), {
    code,
  });
  p.reject(error);
}

/** The spawner is up: check that its pipes can be opened through /proc before using it. */
function onReady(s: SpawnerState, m: Message): void {
  if (!isPid(m.pid) || !isFifo(s, m.probe)) {
    giveUp(s, 'bad hello');
    return;
  }
  s.spawnerPid = m.pid;
  const ids = agentIds();
  const pid = s.child?.pid;
  // Its uids, gids and groups all as sandboxd's (identity.ts), else it is not used.
  const why = ids && notApart(pid === undefined ? undefined : procIdsOf(pid), ids, serverGid() ?? -1);
  if (why) {
    giveUp(s, `not apart from the agent (${why})`);
    return;
  }
  try {
    const r = openFifo(m.probe, constants.O_RDONLY);
    const buf = Buffer.alloc(2);
    const n = readSync(r, buf, 0, 2, null);
    closeSync(r);
    if (n !== 2 || buf.toString() !== 'ok') throw new Error('probe FIFO did not hold "ok"');
  } catch (e) {
    giveUp(s, `cannot open its FIFOs (${(e as Error).message})`);
    return;
  }
  write(s, { t: 'release', id: 0 });
  clearTimeout(s.startTimer);
  s.state = 'ready';
}

function onSpawned(s: SpawnerState, m: Message, p: Pending): void {
  const fifos = m.fifos as unknown[];
  if (
    !isPid(m.pid) ||
    !Array.isArray(fifos) ||
    fifos.length !== 3 ||
    !fifos.slice(1).every((f) => isFifo(s, f)) ||
    !(isFifo(s, fifos[0]) || (fifos[0] === '' && !p.req.stdin))
  ) {
    p.reject(new WireError('TOOL_FAILED', 'The spawner sent a malformed answer.'));
    giveUp(s, 'malformed answer');
    return;
  }
  const pid = m.pid;
  const [inName, outName, errName] = fifos as [string, string, string];
  const opened: number[] = [];
  try {
    opened.push(openFifo(outName, constants.O_RDONLY));
    opened.push(openFifo(errName, constants.O_RDONLY));
    if (p.req.stdin) opened.push(openFifo(inName, constants.O_WRONLY));
  } catch (e) {
    for (const fd of opened) closeSync(fd);
    write(s, { t: 'release', id: m.id });
    killGroup(pid);
    p.reject(new WireError('TOOL_FAILED', `Could not open the command's pipes: ${(e as Error).message}`));
    return;
  }
  write(s, { t: 'release', id: m.id });
  const [outFd, errFd, inFd] = opened as [number, number, number | undefined];
  const exit = new Promise<Exit>((resolve) => s.running.set(m.id as number, { pid, resolve }));
  startWatchdog(s);
  p.resolve({
    pid,
    stdin: inFd === undefined ? undefined : new Socket({ fd: inFd, readable: false, writable: true }),
    stdout: new Socket({ fd: outFd, readable: true, writable: false }),
    stderr: new Socket({ fd: errFd, readable: true, writable: false }),
    exit,
  });
}
