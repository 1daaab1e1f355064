// The event writer thread (see ./event-writer.ts): takes { id, rows } on its port, writes the rows
// with the libsql backend's own write (one transaction per chunk, in order), and answers
// { id, seqs? | error } after the commit. Holds no state but its connection and statements.
import { type MessagePort, workerData } from 'node:worker_threads';
import { openDatabase } from './db.ts';
import { createLibsqlEventBackend } from './event-log.ts';
import { TRANSACTION_ROWS } from './event-log-port.ts';
import { type PackedRows, unpackRows, type WriterAnswer } from './event-writer.ts';

const { path, index, busyTimeoutMs, answered, port } = workerData as {
  path: string;
  index: boolean;
  busyTimeoutMs: number | undefined;
  answered: Int32Array;
  port: MessagePort;
};

const db = openDatabase({ path, ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }) });
const backend = createLibsqlEventBackend(db, { index });

port.on('message', ({ id, rows: packed }: { id: number; rows: PackedRows }) => {
  const rows = unpackRows(packed);
  const before = rows.map((r) => r.seq);
  let written = 0;
  let error: WriterAnswer['error'];
  try {
    for (; written < rows.length; written += TRANSACTION_ROWS)
      backend.write(rows.slice(written, written + TRANSACTION_ROWS));
    written = rows.length;
  } catch (cause) {
    const { message, code } = cause as { message?: string; code?: unknown };
    error = { message: String(message ?? cause), ...(typeof code === 'string' ? { code } : {}) };
  }
  const stored = rows.slice(0, written);
  const answer: WriterAnswer = { id, written };
  if (stored.some((r, i) => r.seq !== before[i])) answer.seqs = stored.map((r) => r.seq);
  if (error !== undefined) answer.error = error;
  port.postMessage(answer);
  Atomics.add(answered, 0, 1);
  Atomics.notify(answered, 0);
});
