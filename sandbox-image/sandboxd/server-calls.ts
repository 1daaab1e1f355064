// One call of the host's, from request to answer: its deadline (past it, its signal aborts and it is
// answered TOOL_TIMEOUT at once, whether or not its handler ever returns), its stream when it is a
// stream call (streams.ts), the wait for the egress proxy, its handler, and its one answer.
// Invariants: a call is answered exactly once, for the session it came in (a later session never
// sees it); every call but a terminal attach, a stdio program or a stream call has a deadline; a
// call's stream is closed and its in-flight entry removed when it ends; data frames of a stream are
// written only within its credit, so the answers of other calls queue behind at most one window.
import { WireError } from '../../sandbox-wire/errors.ts';
import { MAX_DATA_BYTES, type Op } from '../../sandbox-wire/protocol.ts';
import { failure, listen, type ServerState, send, write } from './server-state.ts';
import type { Args } from './util.ts';

/** The calls that move bytes on a stream of their own (streams.ts). */
const STREAM_OPS: ReadonlySet<Op> = new Set<Op>(['readStream', 'writeStream', 'egressAccept']);
/** The stream calls that take bytes from the host (they grant their whole window at once). */
const RECEIVING_OPS: ReadonlySet<Op> = new Set<Op>(['writeStream', 'egressAccept']);
function noStream(): never {
  throw new WireError('INTERNAL', 'This call has no stream.');
}
/** What a call that is not a stream call gets as its stream: nothing it could use. */
const NO_STREAM = {
  sender: { credit: noStream, frame: noStream, send: noStream, end: noStream },
  receiver: { next: noStream, consumed: noStream },
  close: () => {},
};

/** Extra time a waiting call (exec, jobOutput, termRead) gets past the wait it asked for. */
const WAIT_GRACE_MS = 5000;

/** A call's deadline in ms, or undefined for a subscription. `base` bounds calls that do not wait. */
export const deadlineOf = (op: Op, args: Args, base: number): number | undefined => {
  const ms = (name: string, fallback: number): number => {
    const v = args[name];
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;
  };
  // setTimeout fires at once past 2^31-1 ms: clamp (that is 24 days, no deadline in practice).
  const clamp = (n: number): number => Math.min(n, 2 ** 31 - 1);
  switch (op) {
    case 'termAttach':
    case 'stdioOpen':
    case 'readStream':
    case 'writeStream':
    case 'egressAccept':
      return undefined;
    case 'exec':
      return clamp(ms('timeoutMs', 120_000) + WAIT_GRACE_MS);
    case 'jobOutput':
    case 'termRead':
      return clamp(Math.min(ms('waitMs', 0), 60 * 60 * 1000) + base);
    default:
      return clamp(base);
  }
};

/** Runs one request of the current session and answers it (see the header). */
export async function onRequest(s: ServerState, id: number, op: Op, args: Args): Promise<void> {
  const mine = s.session;
  if (op !== 'ping' && op !== 'dial') s.used = true;
  const ac = new AbortController();
  s.inflight.set(id, ac);
  let answered = false;
  const answer = (message: object): void => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    send(s, mine, message);
    if (s.firstAnswer) {
      s.firstAnswer = false;
      setImmediate(() => {
        void listen(s);
        s.onFirstAnswer?.();
      });
    }
  };
  const limit = deadlineOf(op, args, s.opDeadlineMs);
  const timer =
    limit === undefined
      ? undefined
      : setTimeout(() => {
          ac.abort();
          s.log(`${op} passed its ${limit} ms deadline`);
          answer(
            failure(
              id,
              new WireError(
                'TOOL_TIMEOUT',
                `${op} did not finish within ${limit} ms and was stopped (a FIFO, a huge file or a huge tree?); narrow it down or use bash.`,
              ),
            ),
          );
        }, limit);
  const io = STREAM_OPS.has(op)
    ? s.streams.open(
        id,
        ac.signal,
        {
          send: (message) => send(s, mine, message),
          write: (frame, done) => {
            if (mine === s.session) write(s, frame, done);
          },
          ready: () =>
            s.current === undefined ||
            s.current.output.writableLength <= MAX_DATA_BYTES ||
            !s.current.draining
              ? Promise.resolve()
              : new Promise<void>((resolve) => s.drainWaiters.push(resolve)),
        },
        RECEIVING_OPS.has(op),
      )
    : NO_STREAM;
  try {
    // A ping (the host's first call) and a dial (its second) need no proxy: both are on the way to ready.
    if (op !== 'ping' && op !== 'dial') await listen(s);
    const value = await s.handlers[op](args, { id, signal: ac.signal, session: mine, io });
    answer({ t: 'res', id, ok: true, value });
  } catch (e) {
    answer(failure(id, e));
  } finally {
    io.close();
    clearTimeout(timer);
    if (s.inflight.get(id) === ac) s.inflight.delete(id);
  }
}
