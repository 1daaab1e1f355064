// The output pipes of a program sandboxd started (exec.ts: the agent's commands; stdio.ts: MCP
// and language servers), one rule for both: when the host is slow to read (send() returns false)
// both pipes are paused until the writer drains, so nothing the program writes is dropped, it just
// blocks; after the program exited the pipes are read to their end. Only pipes held open by a
// process that left the program's group (setsid, nohup) are let go: once a grace of reading
// (CLOSE_GRACE_MS; time paused for a slow host does not count) brought nothing new, or after
// CLOSE_MAX_GRACES of them, or at once when the call was cancelled.
import type { Proc } from './launch.ts';

const CLOSE_GRACE_MS = 200;
const CLOSE_MAX_GRACES = 10;

export interface OutputIo {
  /** Send one chunk of output; false means "wait for drain". */
  send(stream: 'stdout' | 'stderr', data: Buffer): boolean;
  onDrain(fn: () => void): void;
}

export interface OutputFlow {
  /**
   * Sends a chunk the program wrote (or the part of it the caller keeps; `undefined`: none, the
   * chunk still counts as read), pausing both pipes when the host asks to wait.
   */
  forward(stream: 'stdout' | 'stderr', part: Buffer | undefined): void;
  /** After the program exited: resolves once its pipes closed or were let go (and destroyed). */
  drained(signal: AbortSignal): Promise<void>;
}

export function outputFlow(proc: Pick<Proc, 'stdout' | 'stderr' | 'closed'>, io: OutputIo): OutputFlow {
  let paused = false; // waiting for the host to drain: output left in the pipes is not lost
  let progress = 0; // bumped by every chunk read and every resume: the close grace waits for quiet

  function pauseUntilDrained(): void {
    if (paused) return;
    paused = true;
    proc.stdout.pause();
    proc.stderr.pause();
    io.onDrain(() => {
      paused = false;
      progress++;
      proc.stdout.resume();
      proc.stderr.resume();
    });
  }

  function forward(stream: 'stdout' | 'stderr', part: Buffer | undefined): void {
    progress++;
    if (part !== undefined && part.length > 0 && !io.send(stream, part)) pauseUntilDrained();
  }

  async function drained(signal: AbortSignal): Promise<void> {
    let grace: NodeJS.Timeout | undefined;
    let closed = false;
    await Promise.race([
      proc.closed.then(() => {
        closed = true;
      }),
      new Promise<void>((resolve) => {
        // The grace is decided after the loop has polled (setImmediate), so output already waiting
        // in a pipe, or in one just resumed, is read first: a busy loop runs timers before it reads.
        let graces = 0;
        const arm = (): void => {
          const seen = progress;
          grace = setTimeout(
            () =>
              setImmediate(() => {
                if (closed) return;
                if (!signal.aborted) {
                  if (paused) return arm();
                  if (progress !== seen && ++graces < CLOSE_MAX_GRACES) return arm();
                }
                resolve();
              }),
            CLOSE_GRACE_MS,
          );
        };
        arm();
      }),
    ]);
    clearTimeout(grace);
    proc.stdout.destroy();
    proc.stderr.destroy();
  }

  return { forward, drained };
}
