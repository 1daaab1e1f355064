// A check on what a language server writes, before any parser sees it: LSP's base protocol is
// `Content-Length: N\r\n` headers, an empty line, then N bytes of JSON. A hostile server could
// announce a body of any size or send an endless header; the JSON-RPC reader would buffer all of it.
// This watcher follows the framing byte by byte-count and calls `refuse` (once) on a header block
// longer than MAX_HEADER_BYTES, a header without a valid Content-Length, or a body over maxBodyBytes;
// the owner then ends the server. It never copies the body.

const MAX_HEADER_BYTES = 4096;
const HEADER_END = Buffer.from('\r\n\r\n');

export interface FrameWatcher {
  /** Checks one chunk of the server's stdout; false once the stream was refused. */
  check(chunk: Buffer): boolean;
}

export function watchFrames(maxBodyBytes: number, refuse: (why: string) => void): FrameWatcher {
  let header = Buffer.alloc(0);
  /** Bytes of the current body still to come; -1 while reading a header. */
  let bodyLeft = -1;
  let refused = false;

  const fail = (why: string): false => {
    if (!refused) {
      refused = true;
      refuse(why);
    }
    return false;
  };

  function check(chunk: Buffer): boolean {
    let at = 0;
    while (!refused && at < chunk.length) {
      if (bodyLeft >= 0) {
        const take = Math.min(bodyLeft, chunk.length - at);
        at += take;
        bodyLeft -= take;
        if (bodyLeft === 0) bodyLeft = -1;
        continue;
      }
      // In a header: look for its end in what we have plus this chunk.
      const room = MAX_HEADER_BYTES - header.length;
      const piece = chunk.subarray(at, at + room + HEADER_END.length);
      const joined = Buffer.concat([header, piece]);
      const end = joined.indexOf(HEADER_END);
      if (end === -1) {
        if (joined.length >= MAX_HEADER_BYTES)
          return fail(`a message header longer than ${MAX_HEADER_BYTES} bytes`);
        header = joined;
        at += piece.length;
        continue;
      }
      const text = joined.subarray(0, end).toString('latin1');
      const match = /^content-length:[ \t]*(\d{1,12})[ \t]*$/im.exec(text);
      if (match === null) return fail('a message without a valid Content-Length header');
      const length = Number(match[1]);
      if (length > maxBodyBytes) return fail(`a message of ${length} bytes (at most ${maxBodyBytes})`);
      // The bytes of this chunk consumed by the header: all of `piece` up to the header's end.
      at += end + HEADER_END.length - header.length;
      header = Buffer.alloc(0);
      bodyLeft = length === 0 ? -1 : length;
    }
    return !refused;
  }

  return { check };
}
