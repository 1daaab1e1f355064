// Reading a response body that comes from outside: never more than `maxBytes` held, the stream
// cancelled as soon as it goes past (EGRESS_FAILED, reason `too large`).
import { SandboxError } from '../errors.ts';

export async function readCapped(response: Response, maxBytes: number): Promise<Buffer> {
  if (response.body === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new SandboxError('EGRESS_FAILED', `The response is larger than ${maxBytes} bytes.`, {
        data: { reason: 'too large', maxBytes },
      });
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}
