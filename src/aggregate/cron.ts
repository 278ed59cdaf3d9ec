/**
 * A cron-like schedule for polling a Source: five fields, `minute hour day-of-month month day-of-week`, in UTC, as
 * crontab(5) writes them: `*`, numbers, ranges `a-b`, lists `a,b`, steps `*∕n` and `a-b/n` (and `a/n`: from a to
 * the end), month and weekday names (`jan`…`dec`, `sun`…`sat`), 0 or 7 for Sunday, and the shorthands `@hourly`,
 * `@daily` (`@midnight`), `@weekly`, `@monthly`, `@yearly` (`@annually`). When both day fields are restricted, a day
 * matching either is due; a day field that starts with `*` (a step `*∕2` too) is not restricted, as in Vixie cron. Pure: no clock; the caller gives the time.
 * @see docs/aggregate.md (`schedule`)
 */
import { ResourceSyncError } from '../core/errors.js';

/** A parsed schedule: the allowed values of each field. */
export interface CronSchedule {
  /** The expression as written. */
  readonly expression: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  /** 0 (Sunday) to 6. */
  readonly weekdays: ReadonlySet<number>;
  /** Both day fields restricted: a day matching either is due. */
  readonly eitherDay: boolean;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day-of-week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

const SHORTHANDS: Readonly<Record<string, string>> = {
  '@hourly': '0 * * * *',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@weekly': '0 0 * * 0',
  '@monthly': '0 0 1 * *',
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
};

/** The longest expression taken (characters). */
const MAX_LENGTH = 1000;
const MINUTE = 60_000;
/** How far ahead the next time is looked for: a schedule with no time in 8 years never matches (`0 0 30 2 *`). */
const HORIZON_MS = 8 * 366 * 86_400_000;

/**
 * What is wrong with a schedule, in words (`minute 61 is out of range 0–59`), or the parsed schedule.
 * @example checkCron('61 * * * *') // 'minute 61 is out of range 0–59'
 */
export function checkCron(expression: string): CronSchedule | string {
  if (expression.length > MAX_LENGTH) return `longer than ${MAX_LENGTH} characters`;
  const text = SHORTHANDS[expression.trim().toLowerCase()] ?? expression.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5 || text === '') return `expected 5 fields (minute hour day-of-month month day-of-week), found ${text === '' ? 0 : parts.length}`;
  const sets: Set<number>[] = [];
  for (const [i, spec] of FIELDS.entries()) {
    const got = parseField(parts[i]!, spec);
    if (typeof got === 'string') return got;
    sets.push(got);
  }
  const [minutes, hours, days, months, weekdays] = sets as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (weekdays.delete(7)) weekdays.add(0);
  const schedule: CronSchedule = { expression, minutes, hours, days, months, weekdays, eitherDay: !parts[2]!.startsWith('*') && !parts[4]!.startsWith('*') };
  if (nextCronTime(schedule, 0) === undefined && nextCronTime(schedule, Date.UTC(2027, 0, 1)) === undefined) return 'no day ever matches';
  return schedule;
}

/**
 * Parses a schedule.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` saying what is wrong (`data.schedule`)
 */
export function parseCron(expression: string): CronSchedule {
  const got = checkCron(expression);
  if (typeof got === 'string') throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Schedule '${expression}': ${got}.`, { data: { schedule: expression } });
  return got;
}

/** The values of one field, or what is wrong with it. */
function parseField(text: string, spec: FieldSpec): Set<number> | string {
  const out = new Set<number>();
  for (const item of text.split(',')) {
    const m = /^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:\/(\d+))?$/i.exec(item);
    if (m === null) return `${spec.name} '${item}' is not *, a number, a range or a step`;
    let from = spec.min;
    let to = spec.name === 'day-of-week' ? 6 : spec.max;
    if (m[1] !== '*') {
      const [a, b] = m[1]!.split('-');
      const lo = value(a!, spec);
      if (typeof lo === 'string') return lo;
      const hi = b === undefined ? (m[2] === undefined ? lo : spec.max) : value(b, spec);
      if (typeof hi === 'string') return hi;
      if (hi < lo) return `${spec.name} range '${m[1]!}' ends before it starts`;
      [from, to] = [lo, hi];
    }
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (!(step >= 1 && step <= spec.max)) return `${spec.name} step '${m[2] ?? ''}' is out of range 1–${spec.max}`;
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/** One value of a field (a number or a name), or what is wrong with it. */
function value(text: string, spec: FieldSpec): number | string {
  const named = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return spec.name === 'month' ? named + 1 : named;
  if (!/^\d+$/.test(text)) return `${spec.name} '${text}' is not a number${spec.names === undefined ? '' : ' or a name'}`;
  const n = Number(text);
  if (n < spec.min || n > spec.max) return `${spec.name} ${text} is out of range ${spec.min}–${spec.max}`;
  return n;
}

/**
 * The first minute strictly after `after` (ms since the epoch) that the schedule names, in UTC; undefined when none
 * comes within 8 years. Jumps a month, a day or an hour at a time where the field rules it out: a few hundred steps
 * at most for any schedule within a year.
 * @example nextCronTime(parseCron('0 3 * * *'), Date.UTC(2026, 0, 1, 5)) // Date.UTC(2026, 0, 2, 3)
 */
export function nextCronTime(schedule: CronSchedule, after: number): number | undefined {
  let t = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  const end = after + HORIZON_MS;
  for (let steps = 0; t <= end && steps < 100_000; steps++) {
    const d = new Date(t);
    const [y, mo, day, h, mi] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes()];
    if (!schedule.months.has(mo + 1)) t = Date.UTC(y, mo + 1, 1);
    else if (!dayMatches(schedule, day, d.getUTCDay())) t = Date.UTC(y, mo, day + 1);
    else if (!schedule.hours.has(h)) t = Date.UTC(y, mo, day, h + 1);
    else if (!schedule.minutes.has(mi)) t += MINUTE;
    else return t;
  }
  return undefined;
}

function dayMatches(s: CronSchedule, day: number, weekday: number): boolean {
  const dom = s.days.has(day);
  const dow = s.weekdays.has(weekday);
  return s.eitherDay ? dom || dow : dom && dow;
}
