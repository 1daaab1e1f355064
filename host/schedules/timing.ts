// When a new schedule first falls due, from schedule_create's arguments: exactly one of
// after_seconds (at least 1 s), every_seconds (at least the service's shortest period) or at (an
// instant in the future, schedule-time.ts reads it), none more than a year ahead.
import { SandboxError } from '../errors.ts';
import type { ScheduleRecord } from '../store/index.ts';
import type { ScheduleRequest } from '../tools/builtin/schedules.ts';
import { instantOf } from './schedule-time.ts';

/** Furthest ahead a schedule may be, and longest period: one year. */
const MAX_AHEAD_MS = 366 * 24 * 3600 * 1000;

export const iso = (t: number): string => new Date(t).toISOString();

export interface Timing {
  kind: ScheduleRecord['kind'];
  /** When it first falls due (ms since the epoch). */
  nextAt: number;
  /** Its period, when it recurs. */
  everyMs: number | undefined;
}

function seconds(name: string, value: number, minMs: number): number {
  const ms = Math.round(value * 1000);
  if (!Number.isFinite(value) || ms < minMs || ms > MAX_AHEAD_MS)
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `${name} must be between ${minMs / 1000} and ${MAX_AHEAD_MS / 1000} seconds (got ${value}).`,
    );
  return ms;
}

/** The schedule's timing at `t`; INVALID_ARGUMENTS saying what to give instead. */
export function timingOf(request: ScheduleRequest, t: number, minPeriodMs: number): Timing {
  if (request.after_seconds !== undefined)
    return {
      kind: 'after',
      nextAt: t + seconds('after_seconds', request.after_seconds, 1),
      everyMs: undefined,
    };
  if (request.every_seconds !== undefined) {
    const everyMs = seconds('every_seconds', request.every_seconds, minPeriodMs);
    return { kind: 'every', nextAt: t + everyMs, everyMs };
  }
  if (request.at !== undefined) {
    const nextAt = instantOf(request.at);
    if (nextAt <= t)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `at is ${iso(nextAt)}, which has passed (it is ${iso(t)} now); give a future time.`,
      );
    if (nextAt - t > MAX_AHEAD_MS)
      throw new SandboxError('INVALID_ARGUMENTS', `at is more than a year ahead (${iso(nextAt)}).`);
    return { kind: 'at', nextAt, everyMs: undefined };
  }
  throw new SandboxError('INVALID_ARGUMENTS', 'Give exactly one of after_seconds, every_seconds or at.');
}
