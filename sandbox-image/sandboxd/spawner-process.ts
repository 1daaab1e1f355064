// The spawner's python process: started (isolated python, the script on fd 3, an environment of
// nothing of ours), its stdout read as one JSON message a line, and its death handled: requests it
// never took reject with SpawnNotTaken, the commands it started are waited for by pid, and it is
// restarted at the next exec unless it died too often.
// Invariants: a death counts once per process (`close`, after every line it wrote was read); a
// line longer than MAX_LINE gives up on the spawner; a spawner not ready within answerTimeoutMs is
// killed; a command whose spawner died resolves its exit (code and signal null) once its pid is gone.
import { type ChildProcess, spawn as nodeSpawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { agentIds } from './identity.ts';
import { onMessage } from './spawner-answers.ts';
import { giveUp, type Message, type SpawnerState } from './spawner-state.ts';
import { SpawnNotTaken } from './spawner-types.ts';
import { alive } from './spawner-watch.ts';

const MAX_LINE = 64 * 1024;

function onDeath(s: SpawnerState, proc: ChildProcess, why: string): void {
  if (proc !== s.child) return;
  s.child = undefined;
  clearTimeout(s.startTimer);
  for (const p of s.pending.values()) {
    clearTimeout(p.timer);
    p.reject(
      p.got
        ? new WireError('TOOL_FAILED', 'The command could not be started (the spawner stopped); try again.')
        : new SpawnNotTaken('the spawner stopped before it read the request'),
    );
  }
  s.pending.clear();
  // Commands it started run on; wait for each to end, with its exit status lost.
  for (const r of s.running.values()) {
    const poll = setInterval(() => {
      if (alive(r.pid)) return;
      clearInterval(poll);
      r.resolve({ code: null, signal: null });
    }, 50);
  }
  s.running.clear();
  if (s.state === 'off') return;
  s.deaths++;
  if (s.deaths > s.maxRestarts) {
    giveUp(s, `died ${s.deaths} times (last: ${why})`);
    return;
  }
  s.log(`stopped (${why}); restarting at the next exec`);
  s.state = 'idle';
}

export function start(s: SpawnerState): void {
  if (s.state === 'off') return; // stopped before a deferred start ran
  s.state = 'starting';
  const { python } = s;
  let proc: ChildProcess;
  try {
    // argv0 and the short -c keep `ps` readable and `pkill -f python` away from it.
    if (!s.box) {
      s.box = mkdtempSync(join(tmpdir(), 'sandboxd-spawner-'));
      s.ownBox = true;
    }
    // The agent's ids, for a spawner that arrives without sandboxd's split (gVisor's execve).
    const ids = agentIds();
    const apart = ids ? [`${ids.uid}:${ids.gid}`] : [];
    proc = nodeSpawn(python, ['-I', '-S', '-c', 'exec(open(3).read())', s.box, ...apart], {
      argv0: 'sandboxd-spawner',
      cwd: '/',
      // Its own environment is not its commands' (each request carries theirs): nothing of ours.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
    });
  } catch (e) {
    giveUp(s, `could not start ${python}: ${(e as Error).message}`);
    return;
  }
  s.child = proc;
  proc.on('error', (e) => {
    if (proc.pid !== undefined) return; // a failed kill, not a death: 'exit' reports deaths
    const code = (e as NodeJS.ErrnoException).code;
    giveUp(s, code === 'ENOENT' ? `${python} not found` : `could not start ${python}: ${e.message}`);
    onDeath(s, proc, e.message);
  });
  // 'close', not 'exit': by then every event it wrote (a `spawned` among them) has been read.
  proc.on('close', (code, sig) => onDeath(s, proc, sig ?? `exit code ${code}`));
  for (const pipe of proc.stdio) pipe?.on('error', () => {}); // EPIPE once it is gone: 'exit' handles it
  const script = proc.stdio[3] as NodeJS.WritableStream | null;
  script?.end(s.script);
  let buf = '';
  proc.stdout?.setEncoding('utf8');
  proc.stdout?.on('data', (chunk: string) => {
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const m = JSON.parse(line) as unknown;
        if (typeof m === 'object' && m !== null) onMessage(s, m as Message);
      } catch {
        // not one of ours: skip the line
      }
      nl = buf.indexOf('\n');
    }
    if (buf.length > MAX_LINE) giveUp(s, 'sent an overlong line');
  });
  s.startTimer = setTimeout(() => {
    s.log(`not ready after ${s.answerTimeoutMs} ms; killing it`);
    proc.kill('SIGKILL');
  }, s.answerTimeoutMs);
}
