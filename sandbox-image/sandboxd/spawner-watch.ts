// The spawner's watchdog: a command that stays a zombie is one the spawner does not reap (stopped,
// or stuck), so the spawner is killed and its commands are waited for the other way (their pids,
// spawner-process.ts), and the calls end.
// Invariants: the watchdog runs (unref'd) only while a command runs; a command is counted a zombie
// only in consecutive checks, and WATCHDOG_CHECKS of them kill the spawner.
import { readFileSync } from 'node:fs';
import type { SpawnerState } from './spawner-state.ts';

const WATCHDOG_MS = 1000;
const WATCHDOG_CHECKS = 3;

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

function watch(s: SpawnerState): void {
  if (s.running.size === 0) {
    clearInterval(s.watchdog);
    s.watchdog = undefined;
    s.unreaped.clear();
    return;
  }
  for (const { pid } of s.running.values()) {
    const seen = zombie(pid) ? (s.unreaped.get(pid) ?? 0) + 1 : 0;
    s.unreaped.set(pid, seen);
    if (seen >= WATCHDOG_CHECKS) {
      s.log(`does not reap pid ${pid}; killing it`);
      s.child?.kill('SIGKILL');
      return;
    }
  }
}

/** Starts the watchdog unless it runs. */
export function startWatchdog(s: SpawnerState): void {
  if (s.watchdog) return;
  s.watchdog = setInterval(watch, WATCHDOG_MS, s);
  s.watchdog.unref();
}
