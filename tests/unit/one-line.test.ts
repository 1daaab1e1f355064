// oneLine: text from outside (a node's error) cannot forge a second line of the service's log or
// send escape sequences to an operator's terminal.
import { expect, it } from 'vitest';
import { LOG_TEXT_MAX, oneLine } from '../../host/errors.ts';

it('escapes newlines, carriage returns, ESC and the other control characters, and keeps the rest', () => {
  expect(oneLine('refused\nnode a: answers again')).toBe('refused\\nnode a: answers again');
  expect(oneLine('a\r\nb\x1b[31mred\x00\x7f')).toBe('a\\r\\nb\\x1b[31mred\\x00\\x7f');
  expect(oneLine('tab\tand ünïcode ✓')).toBe('tab\tand ünïcode ✓');
});

it('cuts what is too long for a log line', () => {
  const long = 'x'.repeat(LOG_TEXT_MAX * 3);
  expect(oneLine(long)).toHaveLength(LOG_TEXT_MAX + 1);
  expect(oneLine(long).endsWith('…')).toBe(true);
});
