// The sandboxd wire protocol: frames and their encoding, operations, message unions and size limits,
// shared by the host client and sandboxd itself (bundled into the image, so this module must run on
// Node 18 and import nothing but node:buffer).
//
// A frame is a 4-byte big-endian length followed by that many bytes of body. A control frame's body
// is UTF-8 JSON (an object: it starts with `{`); small binary payloads travel base64-encoded inside
// it. A data frame's body is a 0x00 kind byte, a 4-byte stream id, at most MAX_DATA_BYTES of raw
// bytes and a 0x00 end byte: bulk transfers (streams.ts: credit-based flow control) move in these,
// without base64. The end byte means no frame ever ends in 0xFF, so a reader that holds back a
// chunk's trailing 0xFF bytes (they may begin a marker) never holds back the end of a whole frame.
// A RESYNC marker (8 bytes of 0xFF) may appear between or inside frames: whoever reads it drops any
// partial frame and starts afresh. The host sends it before every `hello`; sandboxd sends it before
// its answer. That is how a re-attach after a detach in mid-frame resumes on a clean frame boundary.
// A control frame never holds a run of seven 0xFF bytes (JSON text is UTF-8, which never holds 0xFF,
// and a length header holds at most three); a data frame may, so its encoder stuffs a 0x00 after
// every seven 0xFF in a row and the reader drops it: no frame ever holds the marker, whatever the
// bytes it carries (stuffing is below framing: a length counts the bytes before stuffing).
// Invariants: no frame is longer than MAX_FRAME_BYTES in either direction, no data frame carries
// more than MAX_DATA_BYTES; a control frame's JSON is an object; a reader that meets garbage reports
// it once and then ignores everything up to the next RESYNC marker.

export const PROTOCOL_VERSION = 1;
/** Data frames and streams (readStream, writeStream); a sandboxd that says so in its hello speaks them. */
export const STREAMS_VERSION = 1;
/**
 * The link (`dial`): sandboxd connects a unix socket the host listens on, bind-mounted read-only
 * into the container, and the host then speaks this same protocol over it instead of the attach
 * stream (no dockerd or containerd-shim between them). A sandboxd that can says so in its hello.
 * The connection starts with LINK_PREFACE and the 64 hex digits of the token the host sent in its
 * `dial` call, then a newline: the host accepts no other connection.
 */
export const LINK_VERSION = 1;
/**
 * Writes that never follow a symlink (`noSymlinks` on writeFile, mkdir and remove: every
 * component below the root must not be one, what openat2's RESOLVE_NO_SYMLINKS does), for the writes
 * the service makes on its own (the skill loader's). A sandboxd that honours it says so in its hello,
 * and the host asks only one that does: an older one would follow the link.
 */
export const NO_SYMLINKS_VERSION = 1;
export const LINK_PREFACE = 'DSHLINK1 ';
/** Bytes of a link's preface: LINK_PREFACE, a 32-byte token in hex, a newline. */
export const LINK_PREFACE_BYTES = LINK_PREFACE.length + 64 + 1;
export const linkPreface = (token: string): Buffer => Buffer.from(`${LINK_PREFACE}${token}\n`, 'latin1');
/** Largest frame body in either direction. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** Raw bytes that fit in one frame once base64-encoded (4/3), with 85 KiB left for the JSON around them. */
export const MAX_BINARY_BYTES = 12 * 1024 * 1024 - 64 * 1024;
export const RESYNC_BYTE = 0xff;
export const RESYNC_LENGTH = 8;
export const RESYNC_MARKER: Buffer = Buffer.alloc(RESYNC_LENGTH, RESYNC_BYTE);
/** Raw bytes one data frame carries at most: small enough that frames of other calls interleave often. */
export const MAX_DATA_BYTES = 256 * 1024;
/** First body byte of a data frame (a control frame's is `{`). */
export const DATA_KIND = 0x00;
/** Bytes before a data frame's payload: length, kind, stream id. */
export const DATA_HEADER_BYTES = 9;
/** Body bytes of a data frame besides its payload: kind, stream id, end byte. */
const DATA_OVERHEAD = DATA_HEADER_BYTES - 4 + 1;
/** A run this long of 0xFF is followed by a stuffed 0x00 (one shorter than the marker). */
const STUFF_RUN = RESYNC_LENGTH - 1;
const STUFF_NEEDLE: Buffer = Buffer.alloc(STUFF_RUN, RESYNC_BYTE);

/** Every operation sandboxd answers; `args` and `value` shapes are in host/sandbox/sandboxd/schemas.ts. */
export const OPS = [
  'ping',
  'readFile',
  'readRange',
  'writeFile',
  'appendFile',
  'stat',
  'list',
  'mkdir',
  'remove',
  'rename',
  'glob',
  'grep',
  'exec',
  'jobStart',
  'jobList',
  'jobOutput',
  'jobKill',
  'termOpen',
  'termList',
  'termWrite',
  'termRead',
  'termResize',
  'termSignal',
  'termClose',
  'termAttach',
  'stdioOpen',
  'stdioWrite',
  'readStream',
  'writeStream',
  'egressAccept',
  'egressTrust',
  'dial',
] as const;
export type Op = (typeof OPS)[number];

/** Host → sandboxd. */
export type HostMessage =
  /** Starts a session: sandboxd forgets the previous session's calls (kills its execs). */
  | { t: 'hello'; v: number; session: string }
  /** One call; answered by exactly one `res` with the same id. */
  | { t: 'req'; id: number; op: Op; args: Record<string, unknown> }
  /** Abort an exec, a waiting jobOutput or a stream; its `res` still follows. */
  | { t: 'cancel'; id: number }
  /** Flow control (streams.ts): the sender may send `bytes` more on stream `id`. */
  | { t: 'credit'; id: number; bytes: number }
  /** No more data frames on stream `id` from this side. */
  | { t: 'end'; id: number };

/** sandboxd → host. */
export type DaemonMessage =
  /** `streams` (this protocol's STREAMS_VERSION) says sandboxd speaks data frames; older ones omit it. */
  | {
      t: 'hello';
      v: number;
      session: string;
      pid: number;
      root: string;
      node: string;
      streams?: number;
      /** LINK_VERSION: sandboxd can dial the host's link socket. */
      link?: number;
      /** NO_SYMLINKS_VERSION: sandboxd honours `noSymlinks`. */
      noSymlinks?: number;
    }
  /** Flow control and end of a stream, as the host sends them. */
  | { t: 'credit'; id: number; bytes: number }
  | { t: 'end'; id: number }
  /** A call's answer: a value, or an error with a stable code from errors.ts's short list. */
  | { t: 'res'; id: number; ok: true; value: unknown }
  | { t: 'res'; id: number; ok: false; error: { code: string; message: string } }
  /** Streamed output of an exec or stdioOpen call, base64. */
  | { t: 'out'; id: number; stream: 'stdout' | 'stderr'; data: string }
  /**
   * Streamed output of a termAttach call, base64: the terminal's bytes from absolute `offset` on.
   * A gap between one frame's end and the next frame's offset is output the ring buffer dropped.
   */
  | { t: 'tout'; id: number; offset: number; data: string };

export class FrameError extends Error {
  override name = 'FrameError';
}

/** Encode one message as a frame; throws FrameError when it exceeds MAX_FRAME_BYTES. */
export const encodeFrame = (message: object, maxBytes: number = MAX_FRAME_BYTES): Buffer => {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  if (body.length > maxBytes)
    throw new FrameError(`frame of ${body.length} bytes exceeds the ${maxBytes}-byte limit`);
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  return frame;
};

/**
 * `frame` with a 0x00 after every run of seven 0xFF bytes, so that it can never hold a RESYNC marker.
 * Returns `frame` itself when it holds no such run (the common case: no copy).
 */
export const stuff = (frame: Buffer): Buffer => {
  let at = frame.indexOf(STUFF_NEEDLE);
  if (at === -1) return frame;
  const parts: Buffer[] = [];
  let from = 0;
  const zero = Buffer.alloc(1);
  while (at !== -1) {
    parts.push(frame.subarray(from, at + STUFF_RUN), zero);
    from = at + STUFF_RUN;
    at = frame.indexOf(STUFF_NEEDLE, from);
  }
  parts.push(frame.subarray(from));
  return Buffer.concat(parts);
};

/**
 * A data frame with room for `bytes` of payload at DATA_HEADER_BYTES, to be filled in place (a file
 * read straight into it) and finished with finishData.
 */
export const allocData = (id: number, bytes: number): Buffer => {
  if (!Number.isInteger(bytes) || bytes < 0 || bytes > MAX_DATA_BYTES)
    throw new FrameError(`a data frame carries 0 to ${MAX_DATA_BYTES} bytes, not ${bytes}`);
  const frame = Buffer.allocUnsafe(DATA_HEADER_BYTES + bytes + 1);
  frame[4] = DATA_KIND;
  frame.writeUInt32BE(id, 5);
  return frame;
};

/** The wire form of a frame from allocData whose first `used` payload bytes are filled. */
export const finishData = (frame: Buffer, used: number): Buffer => {
  const body = frame.subarray(0, DATA_HEADER_BYTES + used + 1);
  body.writeUInt32BE(used + DATA_OVERHEAD, 0);
  body[DATA_HEADER_BYTES + used] = 0;
  return stuff(body);
};

/** One data frame carrying `payload` (at most MAX_DATA_BYTES) on stream `id`, stuffed. */
export const encodeData = (id: number, payload: Uint8Array): Buffer => {
  const frame = allocData(id, payload.length);
  frame.set(payload, DATA_HEADER_BYTES);
  return finishData(frame, payload.length);
};

/** How many of `buf`'s bytes from its start (`fromEnd`: from its end) are 0xFF, counting at most STUFF_RUN. */
const runOfFF = (buf: Buffer, fromEnd: boolean): number => {
  let k = 0;
  while (k < STUFF_RUN && k < buf.length && buf[fromEnd ? buf.length - 1 - k : k] === RESYNC_BYTE) k++;
  return k;
};

/**
 * One data frame carrying the concatenation of `parts` (at most MAX_DATA_BYTES in all) on stream
 * `id`, as the buffers to write one after another (a writev): its header, the parts themselves
 * (no copy) and its end byte. Only when the bytes would need stuffing (a run of seven 0xFF, within
 * a part or across parts or the header) is it one stuffed copy (encodeData).
 */
export const encodeDataParts = (id: number, parts: readonly Buffer[]): Buffer[] => {
  let bytes = 0;
  for (const part of parts) bytes += part.length;
  if (bytes > MAX_DATA_BYTES)
    throw new FrameError(`a data frame carries 0 to ${MAX_DATA_BYTES} bytes, not ${bytes}`);
  const header = allocData(id, 0).subarray(0, DATA_HEADER_BYTES);
  header.writeUInt32BE(bytes + DATA_OVERHEAD, 0);
  let run = runOfFF(header, true);
  for (const part of parts) {
    const lead = runOfFF(part, false);
    if (run + lead >= STUFF_RUN || part.indexOf(STUFF_NEEDLE) !== -1)
      return [encodeData(id, Buffer.concat(parts as Buffer[], bytes))];
    run = lead === part.length ? run + lead : runOfFF(part, true);
  }
  return [header, ...parts, Buffer.alloc(1)];
};

export interface DecoderHandlers {
  /** A complete frame, parsed: always a non-null, non-array object. */
  onMessage(message: Record<string, unknown>): void;
  /**
   * A data frame's stream id and payload, as the parts it arrived in (none for an empty payload):
   * views of the pushed chunks, never concatenated, so a bulk transfer is not copied here. A part
   * that would keep alive more than twice its own bytes of a chunk is a copy instead (keepParts),
   * so what the parts hold stays within twice the payload. Without this handler a data frame is
   * garbage.
   */
  onData?(id: number, payload: Buffer[]): void;
  /** Garbage or an oversized frame; the decoder then skips until the next RESYNC marker. */
  onError(error: FrameError): void;
  /** A RESYNC marker arrived; any partial frame was dropped. */
  onResync?(): void;
}

/** Incremental frame reader with RESYNC handling. Holds at most one frame in memory. */
export class FrameDecoder {
  private readonly handlers: DecoderHandlers;
  private readonly maxBytes: number;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1; // body length of the current frame, or -1 while reading its header
  private broken = false;
  private heldFF = 0; // trailing 0xFF bytes not yet fed: they may be the start of a marker
  private afterMarker = false; // the last chunk ended with a marker: skip its further 0xFF bytes

  constructor(handlers: DecoderHandlers, maxBytes: number = MAX_FRAME_BYTES) {
    this.handlers = handlers;
    this.maxBytes = maxBytes;
  }

  /** Drop any partial frame and the error state, as a RESYNC marker does. */
  reset(): void {
    this.chunks = [];
    this.buffered = 0;
    this.need = -1;
    this.broken = false;
  }

  push(data: Buffer): void {
    let chunk = data;
    if (this.afterMarker) {
      // Further 0xFF bytes right after a marker are part of it: no frame header starts with 0xFF.
      let k = 0;
      while (k < chunk.length && chunk[k] === RESYNC_BYTE) k++;
      if (k === chunk.length) return;
      this.afterMarker = false;
      chunk = chunk.subarray(k);
    }
    if (this.heldFF > 0) {
      // A run of 0xFF that the previous chunk ended with: a marker, a stuffed run, or plain bytes.
      let k = 0;
      while (k < chunk.length && chunk[k] === RESYNC_BYTE) k++;
      const run = this.heldFF + k;
      if (run >= RESYNC_LENGTH) {
        this.heldFF = 0;
        this.resync();
        if (k === chunk.length) {
          this.afterMarker = true;
          return;
        }
        chunk = chunk.subarray(k);
      } else if (k === chunk.length) {
        this.heldFF = run;
        return;
      } else {
        this.heldFF = 0;
        this.feed(Buffer.alloc(run, RESYNC_BYTE));
        chunk = chunk.subarray(k);
        if (run === STUFF_RUN && chunk[0] === 0) chunk = chunk.subarray(1);
      }
    }
    let seg = 0;
    let at = chunk.indexOf(STUFF_NEEDLE);
    while (at !== -1) {
      let j = at + STUFF_RUN;
      while (j < chunk.length && chunk[j] === RESYNC_BYTE) j++;
      if (j - at >= RESYNC_LENGTH) {
        this.feed(chunk.subarray(seg, at));
        this.resync();
        if (j === chunk.length) {
          this.afterMarker = true;
          return;
        }
        seg = j;
      } else if (j === chunk.length) {
        // Seven at the very end: the next chunk says whether a marker or a stuffed 0x00 follows.
        this.feed(chunk.subarray(seg, at));
        this.heldFF = STUFF_RUN;
        return;
      } else if (chunk[j] === 0) {
        this.feed(chunk.subarray(seg, j));
        seg = j + 1; // the stuffed byte
      }
      at = chunk.indexOf(STUFF_NEEDLE, j);
    }
    // Fewer than seven 0xFF at the end may be the start of a marker: hold them.
    let end = chunk.length;
    while (end > seg && chunk[end - 1] === RESYNC_BYTE) end--;
    this.feed(chunk.subarray(seg, end));
    this.heldFF = chunk.length - end;
  }

  private resync(): void {
    this.reset();
    this.handlers.onResync?.();
  }

  private feed(data: Buffer): void {
    if (this.broken || data.length === 0) return;
    this.chunks.push(data);
    this.buffered += data.length;
    for (;;) {
      if (this.need === -1) {
        if (this.buffered < 4) return;
        const length = this.peekUInt32(0);
        this.takeParts(4);
        if (length < 2 || length > this.maxBytes) {
          this.fail(`frame length ${length} is outside 2..${this.maxBytes}`);
          return;
        }
        this.need = length;
      }
      if (this.buffered < this.need) {
        // A data frame announcing more than one data frame may carry fails now, not 16 MiB later.
        if (this.need > DATA_OVERHEAD + MAX_DATA_BYTES && this.chunks[0]?.[0] === DATA_KIND)
          this.fail(`data frame over ${MAX_DATA_BYTES} bytes`);
        return;
      }
      if (this.chunks[0]?.[0] === DATA_KIND) {
        // A data frame's payload is handed over in the parts it came in: no copy of bulk bytes.
        const id = this.need >= DATA_OVERHEAD ? this.peekUInt32(1) : 0;
        const parts = this.takeParts(this.need);
        this.need = -1;
        if (!this.data(id, parts)) return;
        continue;
      }
      const all = this.take(this.buffered);
      const body = all.subarray(0, this.need);
      this.putBack(all.subarray(this.need));
      this.need = -1;
      let message: unknown;
      try {
        message = JSON.parse(body.toString('utf8'));
      } catch {
        this.fail('frame is not JSON');
        return;
      }
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        this.fail('frame is not a JSON object');
        return;
      }
      this.handlers.onMessage(message as Record<string, unknown>);
      if (this.broken) return;
    }
  }

  /** Hands a data frame's payload over (`body`: the frame's body in parts); false when it failed the stream. */
  private data(id: number, body: Buffer[]): boolean {
    const onData = this.handlers.onData;
    if (onData === undefined) {
      this.fail('unexpected data frame');
      return false;
    }
    let length = 0;
    for (const part of body) length += part.length;
    const last = body[body.length - 1];
    if (length < DATA_OVERHEAD || last === undefined || last[last.length - 1] !== 0) {
      this.fail('data frame without a stream id or its end byte');
      return false;
    }
    if (length - DATA_OVERHEAD > MAX_DATA_BYTES) {
      this.fail(`data frame over ${MAX_DATA_BYTES} bytes`);
      return false;
    }
    onData(id, keepParts(sliceParts(body, DATA_HEADER_BYTES - 4, length - 1)));
    return !this.broken;
  }

  /** The big-endian 32-bit integer `at` bytes into what is buffered (at least at + 4 bytes). */
  private peekUInt32(at: number): number {
    let value = 0;
    let skip = at;
    let want = 4;
    for (const chunk of this.chunks) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      for (let i = skip; i < chunk.length && want > 0; i++, want--)
        value = value * 256 + (chunk[i] as number);
      skip = 0;
      if (want === 0) break;
    }
    return value;
  }

  /** The first `n` buffered bytes (at most what is buffered), as views of the chunks they are in. */
  private takeParts(n: number): Buffer[] {
    let whole = 0;
    let left = n;
    while (left > 0 && (this.chunks[whole] as Buffer).length <= left) {
      left -= (this.chunks[whole] as Buffer).length;
      whole++;
    }
    const parts = this.chunks.splice(0, whole);
    if (left > 0) {
      const chunk = this.chunks[0] as Buffer;
      parts.push(chunk.subarray(0, left));
      this.chunks[0] = chunk.subarray(left);
    }
    this.buffered -= n;
    return parts;
  }

  private take(n: number): Buffer {
    const all =
      this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [];
    this.buffered = 0;
    return n === all.length ? all : all.subarray(0, n);
  }

  private putBack(rest: Buffer): void {
    if (rest.length > 0) {
      this.chunks = [rest];
      this.buffered = rest.length;
    }
  }

  private fail(why: string): void {
    this.reset();
    this.broken = true;
    this.handlers.onError(new FrameError(why));
  }
}

/** Bytes `from` to `to` of the concatenation of `parts`, as views (empty parts left out). */
export const sliceParts = (parts: readonly Buffer[], from: number, to: number): Buffer[] => {
  const out: Buffer[] = [];
  let at = 0;
  for (const part of parts) {
    const start = Math.max(from - at, 0);
    const end = Math.min(to - at, part.length);
    if (end > start) out.push(start === 0 && end === part.length ? part : part.subarray(start, end));
    at += part.length;
    if (at >= to) break;
  }
  return out;
};

/** Whether a view keeps alive at most twice its own bytes. */
const dense = (part: Buffer): boolean => part.length * 2 >= part.buffer.byteLength;

/**
 * `parts` with every run of parts that keep alive more than twice their own bytes (small views of
 * big chunks, or the many pieces of a payload full of stuffed 0xFF runs) replaced by one copy: what
 * a queue of parts holds stays within twice their bytes, whatever a hostile peer interleaves around
 * them, and a payload is never more parts than it has dense ones plus one copy between each.
 */
export const keepParts = (parts: Buffer[]): Buffer[] => {
  if (parts.every(dense)) return parts;
  const out: Buffer[] = [];
  let run: Buffer[] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    // A copy of its own (not a slice of the shared pool), so that it keeps alive just its bytes.
    let bytes = 0;
    for (const part of run) bytes += part.length;
    const copy = Buffer.allocUnsafeSlow(bytes);
    let at = 0;
    for (const part of run) at += part.copy(copy, at);
    out.push(copy);
    run = [];
  };
  for (const part of parts) {
    if (dense(part)) {
      flush();
      out.push(part);
    } else run.push(part);
  }
  flush();
  return out;
};

/** Base64 of bytes, and back; the only binary encoding on the wire. */
export const toWire = (data: Uint8Array): string =>
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
export const fromWire = (data: string): Buffer => Buffer.from(data, 'base64');
