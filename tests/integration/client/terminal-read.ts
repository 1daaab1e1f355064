// Reads a client terminal until its output matches a pattern (30 s at most), for the client's
// integration tests.
import type { DshTerminal } from '../../../client/index.ts';

export const readUntil = async (terminal: DshTerminal, pattern: RegExp): Promise<string> => {
  const reader = terminal.readable.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = setTimeout(() => void reader.cancel(), 30_000);
  try {
    while (!pattern.test(text)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the terminal ended before ${pattern}: ${JSON.stringify(text)}`);
      text += decoder.decode(value, { stream: true });
    }
    return text;
  } finally {
    clearTimeout(deadline);
    reader.releaseLock();
  }
};
