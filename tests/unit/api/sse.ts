// Reads a text/event-stream body into { event, id, data } messages until `until` says stop.
import type { Loose } from './harness.ts';

export interface SseMessage {
  event: string;
  id: string | undefined;
  data: Loose;
}

export const readSse = async (
  body: ReadableStream<Uint8Array>,
  until: (messages: SseMessage[]) => boolean = () => false,
): Promise<SseMessage[]> => {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: SseMessage[] = [];
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return messages;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        const lines = block.split('\n').filter((l) => !l.startsWith(':'));
        if (lines.length === 0) continue;
        const field = (name: string) =>
          lines
            .filter((l) => l.startsWith(`${name}:`))
            .map((l) => l.slice(name.length + 1).replace(/^ /, ''));
        const data = field('data').join('\n');
        messages.push({
          event: field('event')[0] ?? 'message',
          id: field('id')[0],
          data: data === '' ? undefined : JSON.parse(data),
        });
        if (until(messages)) return messages;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
};
