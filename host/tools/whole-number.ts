// Arguments the model-facing catalog types as `number` while the tool counts in whole units (lines,
// columns, byte offsets, milliseconds, rounds). The model is shown `type: number`, as the catalog
// promises (seed 000: read's offset/limit, bash's timeoutMs, terminal_read's offset/count, …); a
// fractional value is rounded down by `toWhole` and the range checks that follow apply to the whole
// number, so `limit: 2.5` reads 2 lines and `limit: 0.5` is refused by the minimum like 0 is.
// Arguments the catalog types as `integer` (str_replace_editor's insert_line, the session log's
// seq) keep `v.integer()`, which the model sees as `type: integer` and which refuses 1.5.
// A transform says what the tool makes of a value, not which values it accepts, so define.ts shows
// none to the model.
import * as v from 'valibot';

/** Rounds a number down to the whole one the tool counts in. */
export const toWhole = v.transform<number, number>(Math.floor);
