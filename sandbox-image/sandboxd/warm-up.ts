// A sandbox's first command, run by sandboxd itself while the sandbox waits in the warm pool: once
// the spawner is up, `true` goes through the whole exec path (exec.ts, the spawner's Popen, the
// FIFOs, the output flow) as the agent, in the workspace, and its output goes nowhere. Without it
// an agent's first command paid for that path's first run in this process (V8 compiling it, the
// spawner's first start of a command): its sandboxd exec took 7-10 ms against 3-5 ms for the next
// (issue 33, agent ready). Nothing is written anywhere; a failure is logged and changes nothing.
// Invariants: it runs at most once, never before the host's first call was answered (main.ts), and
// never holds the process open (its timers are unref'd); it does not run once the sandbox is in use
// (any call but the handshake's came): then the agent's own first command has paid that run, and a
// command the agent did not ask for never starts beside the agent's processes (while the spawner
// starts one, its real uid is the agent's: docs/security.md).
import { runExec } from './exec.ts';
import type { Spawner } from './spawner.ts';
import type { Workspace } from './workspace.ts';

/** Longest wait for the spawner before warming up through child_process instead. */
const SPAWNER_WAIT_MS = 5000;
const POLL_MS = 20;

const NO_OUTPUT = { send: () => true, onDrain: () => {} };

export async function warmUp(
  ws: Workspace,
  spawner: Spawner,
  log: (line: string) => void,
  used: () => boolean,
): Promise<void> {
  const deadline = Date.now() + SPAWNER_WAIT_MS;
  while (spawner.state === 'starting' && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS).unref());
  if (used()) return;
  try {
    await runExec(
      ws,
      { command: 'true', timeoutMs: 10_000, maxOutputBytes: 1024 },
      NO_OUTPUT,
      new AbortController().signal,
      spawner,
    );
  } catch (e) {
    log(`warm-up command failed: ${(e as Error).message}`);
  }
}
