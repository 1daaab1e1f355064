// Model-facing text of a finished run, exactly as seed 003 ("PTC mode") words it: the printed lines
// and then the return value (JSON unless it is a string); `(run_code completed with no output)` when
// both are empty; on failure `Error: code run failed (<kind>): <message>`, followed, only when the
// program printed something, by `Captured output:` and the lines.
import type { RunOutcome } from './types.ts';

export const NO_OUTPUT = '(run_code completed with no output)';

export const renderOutcome = (
  outcome: Pick<RunOutcome, 'ok' | 'logs'> & Partial<{ value: unknown; kind: string; message: string }>,
): string => {
  if (!outcome.ok) {
    const head = `Error: code run failed (${outcome.kind}): ${outcome.message}`;
    return outcome.logs.length > 0 ? `${head}\nCaptured output:\n${outcome.logs.join('\n')}` : head;
  }
  const parts = [...outcome.logs];
  if (outcome.value !== undefined) {
    parts.push(typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value, null, 2));
  }
  return parts.length > 0 ? parts.join('\n') : NO_OUTPUT;
};
