import { describe, expect, it } from 'vitest';
import { NO_OUTPUT, renderOutcome } from '../../../host/isolates/render.ts';

describe('renderOutcome (seed 003, PTC mode)', () => {
  it('prints the lines and then the return value, JSON for non-strings', () => {
    expect(renderOutcome({ ok: true, logs: ['a', 'b'], value: { n: 1 } })).toBe('a\nb\n{\n  "n": 1\n}');
    expect(renderOutcome({ ok: true, logs: ['a'], value: 'text' })).toBe('a\ntext');
    expect(renderOutcome({ ok: true, logs: [], value: 0 })).toBe('0');
    expect(renderOutcome({ ok: true, logs: [], value: null })).toBe('null');
  });

  it('says so when there is neither output nor a value', () => {
    expect(renderOutcome({ ok: true, logs: [], value: undefined })).toBe(NO_OUTPUT);
    expect(NO_OUTPUT).toBe('(run_code completed with no output)');
  });

  it('renders failures with the kind, and the captured output only when there was some', () => {
    expect(renderOutcome({ ok: false, kind: 'timeout', message: 'too slow', logs: [] })).toBe(
      'Error: code run failed (timeout): too slow',
    );
    expect(renderOutcome({ ok: false, kind: 'runtime', message: 'Error: x', logs: ['one', 'two'] })).toBe(
      'Error: code run failed (runtime): Error: x\nCaptured output:\none\ntwo',
    );
  });
});
