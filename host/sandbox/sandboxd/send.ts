// What the host sends: frames written with backpressure (one write at a time past a full output,
// a frame's buffers in one corked writev), request ids, and calls: each a pending entry with its
// deadline and abort, cancelled on sandboxd's side when it times out or is aborted; a stream call
// (only when sandboxd's hello said it speaks streams) opens its stream in the table (streams.ts)
// and has no deadline, its stream failing after a stall instead.
// Invariants: a call settles exactly once (its answer, its deadline, its abort, a frame too large,
// a failed write, or the connection's failure) and its timer and abort listener go with it; no
// write starts once the connection failed; ids run from 1 to 2^31, then start at 1 again.
import { encodeFrame, FrameError, type HostMessage, type Op } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import type { ConnState } from './connection-state.ts';
import type { CallOptions, StreamOptions } from './connection-types.ts';
import type { OpValue } from './schemas.ts';
import type { StreamHandle } from './streams.ts';

/** A stream call's timer: none in practice (setTimeout's maximum, 24 days); stalls end streams instead. */
const NO_DEADLINE_MS = 2 ** 31 - 1;

/** Writes a message, a finished frame, or a frame's buffers (one writev: corked). */
export async function send(s: ConnState, message: HostMessage | Buffer | Buffer[]): Promise<void> {
  while (s.draining) await s.draining;
  if (s.failure) throw s.failure;
  const { output } = s;
  let flowing: boolean;
  if (Array.isArray(message)) {
    output.cork();
    flowing = true;
    for (const part of message) flowing = output.write(part) && flowing;
    output.uncork();
  } else flowing = output.write(Buffer.isBuffer(message) ? message : encodeFrame(message));
  if (!flowing) {
    s.draining = new Promise<void>((resolve) => {
      const done = (): void => {
        output.off('drain', done);
        output.off('close', done);
        s.draining = undefined;
        resolve();
      };
      output.on('drain', done);
      output.on('close', done);
    });
  }
}

function takeId(s: ConnState): number {
  const id = s.nextId;
  s.nextId = id >= 2 ** 31 ? 1 : id + 1;
  return id;
}

export function call<O extends Op>(
  s: ConnState,
  op: O,
  args: Record<string, unknown>,
  opts: CallOptions,
): Promise<OpValue<O>> {
  return callAs(s, takeId(s), op, args, opts);
}

export function openStream<O extends Op>(
  s: ConnState,
  op: O,
  args: Record<string, unknown>,
  opts: StreamOptions = {},
): { io: StreamHandle; result: Promise<OpValue<O>> } {
  if (!s.hello?.streams)
    throw new SandboxError('SANDBOX_PROTOCOL', `This sandboxd does not speak streams; ${op} needs them.`);
  const id = takeId(s);
  const ac = new AbortController();
  const io = s.streams.open(id, () => ac.abort(), opts.stallMs);
  const onAbort = (): void => io.abandon();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const result = callAs(s, id, op, args, { timeoutMs: NO_DEADLINE_MS, signal: ac.signal }).finally(() =>
    opts.signal?.removeEventListener('abort', onAbort),
  );
  io.opened();
  // The caller may never await it (a consumer that stopped): never an unhandled rejection.
  result.catch(() => {});
  if (opts.signal?.aborted) io.abandon();
  return { io, result };
}

function callAs<O extends Op>(
  s: ConnState,
  id: number,
  op: O,
  args: Record<string, unknown>,
  opts: CallOptions,
): Promise<OpValue<O>> {
  if (s.failure) return Promise.reject(s.failure);
  if (opts.signal?.aborted)
    return Promise.reject(new SandboxError('ABORTED', `${op} was aborted before it started.`));
  const { pending } = s;
  return new Promise<OpValue<O>>((resolve, reject) => {
    const cleanup = (): void => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      if (!pending.delete(id)) return;
      cleanup();
      send(s, { t: 'cancel', id }).catch(() => {});
      reject(new SandboxError('ABORTED', `${op} was aborted.`));
    };
    const timer = setTimeout(() => {
      if (!pending.delete(id)) return;
      cleanup();
      send(s, { t: 'cancel', id }).catch(() => {});
      reject(
        new SandboxError(
          'SANDBOX_UNAVAILABLE',
          `sandboxd did not answer ${op} within ${opts.timeoutMs} ms.`,
          {
            data: { op },
          },
        ),
      );
    }, opts.timeoutMs);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    pending.set(id, {
      op,
      onOut: opts.onOut,
      onTerm: opts.onTerm,
      resolve: (value) => {
        cleanup();
        resolve(value as OpValue<O>);
      },
      reject: (error) => {
        cleanup();
        reject(error);
      },
    });
    let frame: Buffer;
    try {
      frame = encodeFrame({ t: 'req', id, op, args });
    } catch (e) {
      pending.delete(id);
      cleanup();
      const why = e instanceof FrameError ? e.message : String(e);
      return reject(
        new SandboxError('PAYLOAD_TOO_LARGE', `${op} request is too large for one frame (${why}).`, {
          cause: e,
        }),
      );
    }
    send(s, frame).catch((e: unknown) =>
      pending
        .get(id)
        ?.reject(e instanceof SandboxError ? e : new SandboxError('SANDBOX_UNAVAILABLE', String(e))),
    );
  });
}
