// The sandboxd wire protocol: frames and their encoding, operations, message unions and size limits,
// shared by the host client and sandboxd itself (bundled into the image, so this module must run on
// Node 18 and import nothing but node:buffer).
//
// A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. Binary payloads
// travel base64-encoded inside the JSON. A RESYNC marker (8 bytes of 0xFF) may appear between or
// inside frames: a valid frame stream can never contain it (JSON text is UTF-8, which never holds
// 0xFF, and a length header holds at most three), so whoever reads it drops any partial frame and
// starts afresh. The host sends it before every `hello`; sandboxd sends it before its answer. That
// is how a re-attach after a detach in mid-frame resumes on a clean frame boundary.
// Invariants: no frame is longer than MAX_FRAME_BYTES in either direction; a frame's JSON is an
// object; a reader that meets garbage reports it once and then ignores everything up to the next
// RESYNC marker.

export const PROTOCOL_VERSION = 1;
/** Largest frame body in either direction. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** Raw bytes that fit in one frame once base64-encoded (4/3), with 85 KiB left for the JSON around them. */
export const MAX_BINARY_BYTES = 12 * 1024 * 1024 - 64 * 1024;
export const RESYNC_BYTE = 0xff;
export const RESYNC_LENGTH = 8;
export const RESYNC_MARKER: Buffer = Buffer.alloc(RESYNC_LENGTH, RESYNC_BYTE);

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
] as const;
export type Op = (typeof OPS)[number];

/** Host → sandboxd. */
export type HostMessage =
  /** Starts a session: sandboxd forgets the previous session's calls (kills its execs). */
  | { t: 'hello'; v: number; session: string }
  /** One call; answered by exactly one `res` with the same id. */
  | { t: 'req'; id: number; op: Op; args: Record<string, unknown> }
  /** Abort an exec or a waiting jobOutput; its `res` still follows. */
  | { t: 'cancel'; id: number };

/** sandboxd → host. */
export type DaemonMessage =
  | { t: 'hello'; v: number; session: string; pid: number; root: string; node: string }
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

export interface DecoderHandlers {
  /** A complete frame, parsed: always a non-null, non-array object. */
  onMessage(message: Record<string, unknown>): void;
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
    let segStart = 0;
    let i = chunk.indexOf(RESYNC_BYTE);
    if (this.heldFF > 0 && i !== 0) this.releaseHeld();
    while (i !== -1) {
      let j = i;
      while (j < chunk.length && chunk[j] === RESYNC_BYTE) j++;
      const carried = i === 0 ? this.heldFF : 0;
      if (carried + (j - i) >= RESYNC_LENGTH) {
        this.feed(chunk.subarray(segStart, i));
        this.heldFF = 0;
        this.reset();
        this.handlers.onResync?.();
        segStart = j;
        if (j === chunk.length) this.afterMarker = true;
      } else if (j === chunk.length) {
        this.feed(chunk.subarray(segStart, i));
        this.heldFF = carried + (j - i);
        return;
      } else if (carried > 0) {
        this.releaseHeld();
      }
      i = j < chunk.length ? chunk.indexOf(RESYNC_BYTE, j) : -1;
    }
    this.feed(chunk.subarray(segStart));
  }

  private releaseHeld(): void {
    const held = Buffer.alloc(this.heldFF, RESYNC_BYTE);
    this.heldFF = 0;
    this.feed(held);
  }

  private feed(data: Buffer): void {
    if (this.broken || data.length === 0) return;
    this.chunks.push(data);
    this.buffered += data.length;
    for (;;) {
      if (this.need === -1) {
        if (this.buffered < 4) return;
        const all = this.take(this.buffered);
        const length = all.readUInt32BE(0);
        this.putBack(all.subarray(4));
        if (length < 2 || length > this.maxBytes) {
          this.fail(`frame length ${length} is outside 2..${this.maxBytes}`);
          return;
        }
        this.need = length;
      }
      if (this.buffered < this.need) return;
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

/** Base64 of bytes, and back; the only binary encoding on the wire. */
export const toWire = (data: Uint8Array): string =>
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
export const fromWire = (data: string): Buffer => Buffer.from(data, 'base64');
