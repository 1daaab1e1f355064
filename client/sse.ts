// Server-sent events read from a fetch body, as the HTML standard's event-stream parser does:
// lines end with CRLF, LF or CR (also split across chunks), `data` lines join with LF, `:` lines
// are comments (the service's `: ping`), a blank line dispatches, a message without data is not
// dispatched, and the last event id carries over to later messages until an `id` field changes it.
// Pure: no network, so the unit tests feed it chunks cut anywhere.

/** One dispatched message. */
export interface SseMessage {
  /** The `event` field; `message` when the stream names none. */
  event: string;
  data: string;
  /** The last event id the stream set (on this message or an earlier one). */
  id: string | undefined;
  /** A `retry` field's reconnection delay in ms, when this message carried one. */
  retry?: number;
}

/** A push parser: feed it text, it calls `onMessage` for every complete message. */
export function createSseParser(onMessage: (message: SseMessage) => void): {
  push(text: string): void;
} {
  let buffer = '';
  /** The previous chunk ended with CR: a LF starting the next one belongs to that line end. */
  let skipLf = false;
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let retry: number | undefined;

  function dispatch(): void {
    if (data.length > 0) {
      onMessage({
        event: event === '' ? 'message' : event,
        data: data.join('\n'),
        id,
        ...(retry === undefined ? {} : { retry }),
      });
    }
    event = '';
    data = [];
    retry = undefined;
  }

  function line(text: string): void {
    if (text === '') {
      dispatch();
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  }

  return {
    push(text) {
      let chunk = text;
      if (skipLf && chunk.startsWith('\n')) chunk = chunk.slice(1);
      skipLf = false;
      buffer += chunk;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        line(buffer.slice(start, i));
        if (c === '\r') {
          if (i + 1 === buffer.length) skipLf = true;
          else if (buffer[i + 1] === '\n') i++;
        }
        start = i + 1;
      }
      buffer = buffer.slice(start);
    },
  };
}

/** The messages of an event-stream body, in order; ends when the body ends (a partial message is dropped). */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const queue: SseMessage[] = [];
  const parser = createSseParser((message) => queue.push(message));
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.push(decoder.decode(value, { stream: true }));
      while (queue.length > 0) yield queue.shift() as SseMessage;
    }
  } finally {
    // A consumer that stops early (or an error) lets go of the connection.
    await reader.cancel().catch(() => undefined);
  }
}
