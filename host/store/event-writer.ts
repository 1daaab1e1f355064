// The event log's writer thread: the libsql transactions of the durable log run on a worker thread
// (./event-writer-thread.ts) with its own connection to the same file, so the control plane's event
// loop only shapes and queues rows while SQLite inserts and indexes them (a 1,000-call batch is
// ~2,000 rows: tens of ms of SQLite work that used to hold every other request).
// Invariants: one write is in flight at a time and writes commit in the order they were given;
// `done` is called exactly once per write, after its transaction committed (with the seqs it
// stored) or failed; `waitSync` blocks until the write in flight has called `done` (close() needs
// a synchronous end). If the thread dies, its write fails and every later write fails at once: the
// caller falls back to writing on its own connection.
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { SandboxError } from '../errors.ts';
import type { AsyncEventWriter, QueuedRow } from './event-log-port.ts';

type WriteDone = Parameters<AsyncEventWriter['write']>[1];

/** What the thread answers for one write. */
export interface WriterAnswer {
  id: number;
  /** Rows stored, from the first. */
  written: number;
  /** Their seqs, only when the backend renumbered some (another process wrote meanwhile). */
  seqs?: number[];
  error?: { message: string; code?: string };
}

export interface EventWriterOptions {
  /** The database file (a path, never `:memory:`: a thread cannot share an in-memory database). */
  path: string;
  /** Index every event for full-text search (event-log.ts). Default true. */
  index?: boolean;
  busyTimeoutMs?: number;
}

const THREAD = new URL('./event-writer-thread.ts', import.meta.url);

/**
 * Rows as bytes and numbers: structured clone pays per string (2,000 rows are ~16,000 strings), so
 * the few distinct short strings (session, type, surface, tenant) go once in a table, the long ones
 * (call ids, data, refs) as UTF-8 in one buffer, and the rest as numbers. Both buffers are shared
 * memory, posted by reference (a transferred or copied buffer cost 1-7 ms per 2,000 rows).
 */
export interface PackedRows {
  /** Distinct sessionId, type, surface and tenantId values, referenced by index. */
  table: string[];
  /** NUMBERS per row: seq, at, bytes, then the table index of sessionId, type, surface, tenantId, then the byte length of callId, parentCallId, data, refs (-1: undefined). */
  numbers: Float64Array;
  /** The UTF-8 of every row's callId, parentCallId, data and refs, in that order. */
  bytes: Uint8Array;
  /** The payloads rows store first, by row index (most rows have none). */
  blobs: [number, QueuedRow['blobs']][];
}

/**
 * The shared memory one writer packs into, kept from write to write: a new SharedArrayBuffer costs
 * ~0.5 ms per 200 KB (more than packing 2,000 rows into it). Safe to reuse because one write is in
 * flight at a time and the thread copies a write's rows out (unpackRows) before it answers; a
 * space larger than RETAIN_BYTES is used for its one write and not kept.
 */
export interface PackSpace {
  bytes?: SharedArrayBuffer;
  numbers?: SharedArrayBuffer;
}

const NUMBERS = 11;
const RETAIN_BYTES = 8 * 1024 * 1024;
const MIN_SPACE = 64 * 1024;

function take(space: PackSpace, key: keyof PackSpace, size: number): SharedArrayBuffer {
  const kept = space[key];
  if (kept !== undefined && kept.byteLength >= size) return kept;
  // Grown to a power of two so a growing batch size reallocates a few times, not every write.
  const grown = Math.max(MIN_SPACE, 2 ** Math.ceil(Math.log2(Math.max(1, size))));
  if (grown > RETAIN_BYTES) return new SharedArrayBuffer(size);
  const buffer = new SharedArrayBuffer(grown);
  space[key] = buffer;
  return buffer;
}

/** Table indexes of distinct strings; the last one looked up per field is answered without the map. */
function createInterner(table: string[]) {
  const indexOf = new Map<string, number>();
  return (): ((value: string) => number) => {
    let last: string | undefined;
    let lastIndex = -1;
    return (value) => {
      if (value === last) return lastIndex;
      let i = indexOf.get(value);
      if (i === undefined) {
        i = table.push(value) - 1;
        indexOf.set(value, i);
      }
      last = value;
      lastIndex = i;
      return i;
    };
  };
}

export function packRows(rows: readonly QueuedRow[], space: PackSpace = {}): PackedRows {
  const table: string[] = [];
  const field = createInterner(table);
  const session = field();
  const type = field();
  const surface = field();
  const tenant = field();
  let chars = 0;
  for (const r of rows)
    chars += (r.callId?.length ?? 0) + (r.parentCallId?.length ?? 0) + r.data.length + (r.refs?.length ?? 0);
  // A UTF-16 unit is at most 3 bytes of UTF-8.
  const shared = take(space, 'bytes', chars * 3);
  const buffer = Buffer.from(shared, 0, chars * 3);
  const numbers = new Float64Array(
    take(space, 'numbers', rows.length * NUMBERS * 8),
    0,
    rows.length * NUMBERS,
  );
  const blobs: PackedRows['blobs'] = [];
  let offset = 0;
  /** Writes a long value's UTF-8 and returns its byte length (-1: undefined). */
  const put = (value: string | undefined): number => {
    if (value === undefined) return -1;
    if (value.length === 0) return 0;
    const written = buffer.write(value, offset);
    offset += written;
    return written;
  };
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as QueuedRow;
    const n = i * NUMBERS;
    numbers[n] = r.seq;
    numbers[n + 1] = r.at;
    numbers[n + 2] = r.bytes;
    numbers[n + 3] = session(r.sessionId);
    numbers[n + 4] = type(r.type);
    numbers[n + 5] = surface(r.surface);
    numbers[n + 6] = tenant(r.tenantId);
    // callId, parentCallId, data, refs: the order of PackedRows.numbers.
    numbers[n + 7] = put(r.callId);
    numbers[n + 8] = put(r.parentCallId);
    numbers[n + 9] = put(r.data);
    numbers[n + 10] = put(r.refs);
    if (r.blobs.length > 0) blobs.push([i, r.blobs]);
  }
  return { table, numbers, bytes: new Uint8Array(shared, 0, offset), blobs };
}

export function unpackRows({ table, numbers, bytes, blobs }: PackedRows): QueuedRow[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rows: QueuedRow[] = new Array(numbers.length / NUMBERS);
  let offset = 0;
  const text = (length: number): string | undefined => {
    if (length < 0) return undefined;
    const value = buffer.toString('utf8', offset, offset + length);
    offset += length;
    return value;
  };
  for (let i = 0; i < rows.length; i++) {
    const n = i * NUMBERS;
    const callId = text(numbers[n + 7] as number);
    const parentCallId = text(numbers[n + 8] as number);
    const data = text(numbers[n + 9] as number) as string;
    const refs = text(numbers[n + 10] as number);
    rows[i] = {
      seq: numbers[n] as number,
      at: numbers[n + 1] as number,
      bytes: numbers[n + 2] as number,
      sessionId: table[numbers[n + 3] as number] as string,
      type: table[numbers[n + 4] as number] as string,
      surface: table[numbers[n + 5] as number] as QueuedRow['surface'],
      tenantId: table[numbers[n + 6] as number] as string,
      callId,
      parentCallId,
      data,
      refs,
      blobs: [],
    };
  }
  for (const [i, list] of blobs) (rows[i] as QueuedRow).blobs = list;
  return rows;
}

export function createEventWriter(options: EventWriterOptions): AsyncEventWriter {
  // answered[0] counts answers posted; the thread raises it after each postMessage.
  const answered = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(THREAD, {
    workerData: {
      path: options.path,
      index: options.index ?? true,
      busyTimeoutMs: options.busyTimeoutMs,
      answered,
      port: port2,
    },
    transferList: [port2],
  });
  worker.unref();
  port1.unref();
  let nextId = 1;
  let inFlight: { id: number; done: WriteDone } | undefined;
  let dead: unknown;
  let seen = 0;
  const space: PackSpace = {};

  function settle(answer: WriterAnswer): void {
    seen++;
    if (inFlight === undefined || inFlight.id !== answer.id) return;
    const { done } = inFlight;
    inFlight = undefined;
    port1.unref();
    const seqs = answer.seqs === undefined ? {} : { seqs: answer.seqs };
    if (answer.error === undefined) done({ stored: answer.written, ...seqs });
    else {
      const error = Object.assign(new Error(answer.error.message), { code: answer.error.code });
      done({ stored: answer.written, ...seqs, error });
    }
  }

  function die(error: unknown): void {
    dead ??= new SandboxError('STORE_FAILED', 'the event writer thread ended; events are written inline', {
      cause: error,
    });
    const pending = inFlight;
    inFlight = undefined;
    port1.unref();
    pending?.done({ stored: 0, error: dead, lost: true });
  }

  port1.on('message', settle);
  worker.on('error', die);
  worker.on('exit', (code) => die(new Error(`exit ${code}`)));

  return {
    write(rows, done) {
      if (dead !== undefined) {
        done({ stored: 0, error: dead, lost: true });
        return;
      }
      if (inFlight !== undefined) throw new Error('event writer: one write at a time');
      const id = nextId++;
      inFlight = { id, done };
      // A write in flight keeps the process up, as the inline writer's setImmediate did.
      port1.ref();
      const packed = packRows(rows, space);
      port1.postMessage({ id, rows: packed });
    },

    waitSync() {
      while (inFlight !== undefined && dead === undefined) {
        const message = receiveMessageOnPort(port1 as MessagePort);
        if (message !== undefined) {
          settle(message.message as WriterAnswer);
          continue;
        }
        // Wakes when the thread posts its next answer; the bound only guards against a dead thread.
        if (Atomics.wait(answered, 0, seen, 1000) === 'timed-out' && !isAlive()) die(new Error('no answer'));
      }
    },

    close() {
      port1.close();
      void worker.terminate();
    },
  };

  function isAlive(): boolean {
    return worker.threadId !== -1;
  }
}
