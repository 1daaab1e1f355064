// cleanTerminalText: what the model reads of terminal output. Issue 10 replaced its per-character
// scanner (about a second per 4 MiB) with linear passes; these cases pin the behaviour it kept.
import { describe, expect, it } from 'vitest';
import { cleanTerminalText } from '../../../host/tools/builtin/terminal-text.ts';

describe('cleanTerminalText', () => {
  it.each([
    ['\u001b[1;32mok\u001b[0m\r\n10%\r50%\r100%\r\n\u001b]0;title\u0007done', 'ok\n100%\ndone'],
    ['x\r\r\n', '\n'],
    ['x\r', 'x'],
    ['x\r\r', ''],
    ['a\nb\rc\nd', 'a\nc\nd'],
    ['ab\rcd\ref', 'ef'],
    ['\u001b[31', ''],
    ['\u001b]0;title\u001b\\rest', 'rest'],
    ['\u001b]0;never ends', ''],
    ['a\u001b', 'a'],
    ['a\u001bxb', 'ab'],
    ['tab\there\u0001\u0007\u007f', 'tab\there\u007f'],
    ['\r\n\r\n', '\n\n'],
  ])('%j reads as %j', (raw, expected) => {
    expect(cleanTerminalText(raw)).toBe(expected);
  });

  it('handles megabytes of carriage returns and escapes (linear passes)', () => {
    expect(cleanTerminalText('ab\r'.repeat(1 << 20))).toBe('ab');
    expect(cleanTerminalText(`\u001b[${'1;'.repeat(1 << 20)}mX`)).toBe('X');
    expect(cleanTerminalText('\r'.repeat(1 << 22)).length).toBe(0);
  });
});
