// Host-side schemas for everything sandboxd sends. sandboxd runs next to untrusted code, so each
// frame is checked here before any field is used: the envelope (hello, res, out) and, per op, the
// value of a successful answer. Paths in answers must lie inside the workspace root.
// Not bundled into the image (sandboxd never imports this module).

import * as v from 'valibot';
import type { Op } from '../../../sandbox-wire/protocol.ts';
import { isInside } from '../paths.ts';

const int = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
const id = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(2 ** 31));
const text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const base64 = v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/]*={0,2}$/));

export const daemonMessageSchema = v.variant('t', [
  v.object({
    t: v.literal('hello'),
    v: v.number(),
    session: text(64),
    pid: int,
    root: text(4096),
    node: text(64),
    streams: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
    link: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
    noSymlinks: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  }),
  v.object({ t: v.literal('credit'), id, bytes: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
  v.object({ t: v.literal('end'), id }),
  v.object({ t: v.literal('res'), id, ok: v.literal(true), value: v.unknown() }),
  v.object({
    t: v.literal('res'),
    id,
    ok: v.literal(false),
    error: v.object({ code: text(64), message: text(8192) }),
  }),
  v.object({ t: v.literal('out'), id, stream: v.picklist(['stdout', 'stderr']), data: base64 }),
  v.object({ t: v.literal('tout'), id, offset: int, data: base64 }),
]);
export type ParsedDaemonMessage = v.InferOutput<typeof daemonMessageSchema>;

const fileType = v.picklist(['file', 'directory', 'symlink', 'other']);
const jobInfoEntries = {
  id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/)),
  command: text(1024 * 1024),
  cwd: text(4096),
  status: v.picklist(['running', 'exited', 'killed']),
  exitCode: v.nullable(v.pipe(v.number(), v.integer())),
  startedAt: int,
  endedAt: v.nullable(int),
};

const terminalInfoEntries = {
  id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/)),
  name: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._-]{1,64}$/))),
  command: v.pipe(v.array(text(4096)), v.maxLength(64)),
  cols: v.pipe(int, v.maxValue(1000)),
  rows: v.pipe(int, v.maxValue(1000)),
  pid: v.nullable(int),
  status: v.picklist(['running', 'exited']),
  exitCode: v.nullable(v.pipe(v.number(), v.integer())),
  signal: v.nullable(text(32)),
  startedAt: int,
  endedAt: v.nullable(int),
  startOffset: int,
  endOffset: int,
  busy: v.boolean(),
};
/** Bytes of terminal output in one read answer (1 MiB of data, base64). */
const TERMINAL_READ_CHARS = Math.ceil((1024 * 1024) / 3) * 4;

/** Schemas of each op's successful value; `root` confines every path sandboxd reports. */
export const valueSchemas = (root: string) => {
  const inRoot = v.pipe(
    text(4096),
    v.check((p) => p.startsWith('/') && isInside(root, p), 'path outside the workspace'),
  );
  const stat = v.object({ path: inRoot, type: fileType, size: int, mtimeMs: v.number(), mode: int });
  const jobInfo = v.object({ ...jobInfoEntries, cwd: inRoot });
  const terminalInfo = v.object({ ...terminalInfoEntries, cwd: inRoot });
  return {
    ping: v.object({}),
    // `stat` when asked for (readWithStat), and then `data` only when the bytes were read.
    readFile: v.object({ data: v.optional(base64), stat: v.optional(stat) }),
    readRange: v.object({ data: base64, size: int }),
    readStream: v.object({ bytes: int, size: int }),
    writeStream: v.object({ bytes: int }),
    egressAccept: v.object({ bytesIn: int, bytesOut: int }),
    egressTrust: v.object({}),
    dial: v.object({}),
    writeFile: v.object({}),
    appendFile: v.object({}),
    stat,
    list: v.object({
      entries: v.array(
        v.object({ name: v.pipe(text(255), v.regex(/^[^/\0]+$/)), type: fileType, size: int }),
      ),
    }),
    mkdir: v.object({}),
    remove: v.object({}),
    rename: v.object({}),
    glob: v.object({ paths: v.array(inRoot), truncated: v.boolean() }),
    grep: v.object({
      matches: v.array(v.object({ path: inRoot, line: v.pipe(int, v.minValue(1)), text: text(64 * 1024) })),
      truncated: v.boolean(),
    }),
    exec: v.object({
      exitCode: v.nullable(v.pipe(v.number(), v.integer())),
      timedOut: v.boolean(),
      truncated: v.boolean(),
      durationMs: v.number(),
    }),
    jobStart: jobInfo,
    jobList: v.object({ jobs: v.array(jobInfo) }),
    jobOutput: v.object({
      ...jobInfo.entries,
      output: v.string(),
      offset: int,
      nextOffset: int,
      truncated: v.boolean(),
    }),
    jobKill: jobInfo,
    termOpen: terminalInfo,
    termList: v.object({ terminals: v.pipe(v.array(terminalInfo), v.maxLength(64)) }),
    termWrite: v.object({ bytes: int }),
    termRead: v.object({
      ...terminalInfo.entries,
      data: v.pipe(base64, v.maxLength(TERMINAL_READ_CHARS)),
      offset: int,
      nextOffset: int,
      dropped: int,
    }),
    termResize: terminalInfo,
    termSignal: terminalInfo,
    termClose: terminalInfo,
    termAttach: terminalInfo,
    stdioOpen: v.object({
      exitCode: v.nullable(v.pipe(v.number(), v.integer())),
      signal: v.nullable(text(32)),
    }),
    stdioWrite: v.object({ bytes: int }),
  } satisfies Record<Op, v.GenericSchema>;
};
export type ValueSchemas = ReturnType<typeof valueSchemas>;
export type OpValue<O extends Op> = v.InferOutput<ValueSchemas[O]>;
