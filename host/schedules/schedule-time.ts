// When a schedule_create call is due: `after_seconds`, `every_seconds`, or `at` as an ISO 8601
// string with an offset or as `{ date, time, time_zone }` wall-clock time in an IANA zone (read with
// Intl, so the zone rules are the runtime's ICU data). Pure functions; errors are INVALID_ARGUMENTS
// that say what to send instead. Invariant: a wall-clock time is resolved to the instant that
// shows that time in the zone; a time a DST change skips resolves to the same wall time after the
// shift (02:30 on a spring-forward night is 03:30), a repeated one (fall back) to its second.
import { SandboxError } from '../errors.ts';

/** `at` as the seed types it (ScheduleAt). */
export interface WallTime {
  date: string;
  time: string;
  time_zone: string;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

const invalid = (message: string): SandboxError => new SandboxError('INVALID_ARGUMENTS', message);

/** Formatters by zone: making one costs far more than using it. Bounded: zones are a short list. */
const formatters = new Map<string, Intl.DateTimeFormat>();

const formatterOf = (zone: string): Intl.DateTimeFormat => {
  let format = formatters.get(zone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw invalid(`Unknown time zone ${JSON.stringify(zone)}; use an IANA name such as "Europe/Berlin".`);
    }
    if (formatters.size < 1000) formatters.set(zone, format);
  }
  return format;
};

/** How far the zone's wall clock is ahead of UTC at instant `t`, in ms. */
const offsetAt = (format: Intl.DateTimeFormat, t: number): number => {
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(t))
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(t / 1000) * 1000;
};

/** Date.UTC of the fields, or undefined when they name no real date and time (2026-02-30, 24:00). */
const utcOf = (y: number, mo: number, d: number, h: number, mi: number, s: number): number | undefined => {
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(t);
  return back.getUTCFullYear() === y &&
    back.getUTCMonth() === mo - 1 &&
    back.getUTCDate() === d &&
    back.getUTCHours() === h &&
    back.getUTCMinutes() === mi &&
    back.getUTCSeconds() === s
    ? t
    : undefined;
};

/** The instant of an `at` argument, in epoch ms. */
export const instantOf = (at: string | WallTime): number => {
  if (typeof at === 'string') {
    const m = ISO.exec(at);
    const t = m === null ? Number.NaN : Date.parse(at);
    if (m === null || Number.isNaN(t))
      throw invalid(
        `at ${JSON.stringify(at.slice(0, 64))} is not an ISO 8601 time with an offset (2026-08-21T09:00:00+08:00 or …Z); for a local time use { date, time, time_zone }.`,
      );
    return t;
  }
  const d = DATE.exec(at.date);
  const h = TIME.exec(at.time);
  const wall =
    d === null || h === null
      ? undefined
      : utcOf(Number(d[1]), Number(d[2]), Number(d[3]), Number(h[1]), Number(h[2]), Number(h[3] ?? 0));
  if (wall === undefined)
    throw invalid('at needs date as YYYY-MM-DD and time as HH:MM or HH:MM:SS (24-hour), naming a real date.');
  const format = formatterOf(at.time_zone);
  const first = wall - offsetAt(format, wall);
  return wall - offsetAt(format, first);
};
