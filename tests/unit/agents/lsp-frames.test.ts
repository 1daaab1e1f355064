// What a language server writes is checked before the JSON-RPC reader buffers it (host/tools/builtin/lsp/
// frames.ts): well-formed messages pass however they are split into chunks; an oversize body, an
// endless header or a header without Content-Length is refused once, with the reason.
import { describe, expect, it } from 'vitest';
import { watchFrames } from '../../../host/tools/builtin/lsp/frames.ts';

const frame = (body: string, header = `Content-Length: ${Buffer.byteLength(body)}`) =>
  Buffer.from(`${header}\r\n\r\n${body}`);

const watch = (max = 64) => {
  const refusals: string[] = [];
  const watcher = watchFrames(max, (why) => refusals.push(why));
  return { watcher, refusals };
};

describe('LSP frame watcher', () => {
  it('passes messages whole, byte by byte, and several in one chunk', () => {
    const stream = Buffer.concat([
      frame('{"jsonrpc":"2.0","id":1,"result":null}'),
      frame('{"a":"ü"}', 'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 10'),
      frame('', 'Content-Length: 0'),
    ]);
    const whole = watch();
    expect(whole.watcher.check(stream)).toBe(true);
    const bytes = watch();
    for (const byte of stream) expect(bytes.watcher.check(Buffer.from([byte]))).toBe(true);
    expect([...whole.refusals, ...bytes.refusals]).toEqual([]);
  });

  it('refuses a body over the limit before any of it arrives', () => {
    const { watcher, refusals } = watch(64);
    expect(watcher.check(Buffer.from('Content-Length: 999999999\r\n\r\n'))).toBe(false);
    expect(refusals).toEqual(['a message of 999999999 bytes (at most 64)']);
    expect(watcher.check(frame('{}'))).toBe(false);
    expect(refusals).toHaveLength(1);
  });

  it('refuses an endless header and one without Content-Length', () => {
    const endless = watch();
    for (
      let i = 0;
      i < 100 &&
      endless.watcher.check(Buffer.from('X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'));
      i++
    );
    expect(endless.refusals).toEqual(['a message header longer than 4096 bytes']);
    const missing = watch();
    expect(missing.watcher.check(Buffer.from('Content-Type: x\r\n\r\n{}'))).toBe(false);
    expect(missing.refusals).toEqual(['a message without a valid Content-Length header']);
    const junk = watch();
    expect(junk.watcher.check(Buffer.from('this is not a header\r\n\r\n'))).toBe(false);
    const negative = watch();
    expect(negative.watcher.check(Buffer.from('Content-Length: -5\r\n\r\n'))).toBe(false);
  });
});
