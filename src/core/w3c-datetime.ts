/**
 * W3C Datetime (https://www.w3.org/TR/NOTE-datetime), the format of every time in ResourceSync.
 * Hand-written: a general date library dominated the Python reference's parse time.
 * @see Z39.99 §7 ("expressed as a W3C Datetime")
 */

export type DatetimeGranularity = 'year' | 'month' | 'day' | 'minute' | 'second' | 'fraction';

export interface W3CDatetime {
  /** Milliseconds since the epoch, UTC (the start of the period for year/month/day values). */
  ms: number;
  granularity: DatetimeGranularity;
  /** False when a time was given without a zone designator (tolerated only in lenient mode, read as UTC). */
  zoned: boolean;
}

/**
 * True when `value` separates its date and time with a space (`2020-06-05 03:15:16Z`), which lenient
 * parsing reads as the `T` of a W3C Datetime.
 */
export function hasSpaceSeparator(value: string): boolean {
  const s = value.trim();
  return s.length > 11 && s.charCodeAt(10) === 32;
}

const D0 = 48;

function isSpaceCode(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

function digits(s: string, start: number, n: number): number {
  let v = 0;
  for (let i = start; i < start + n; i++) {
    const c = s.charCodeAt(i) - D0;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil): cheaper than Date.UTC. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, millis = 0): number {
  return ((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/**
 * Parses a W3C Datetime. Returns undefined when `value` is not one. With `lenient`, a time without a
 * zone designator is accepted (as UTC) and marked `zoned: false`, and a space between the date and
 * the time is read as `T` (see `hasSpaceSeparator`); strict mode refuses both, as the W3C profile
 * requires a `T` and a TZD whenever a time is present.
 * @example parseW3CDatetime('2013-01-03T09:00:00+01:00')?.ms === Date.UTC(2013, 0, 3, 8)
 */
export function parseW3CDatetime(value: string, lenient = false): W3CDatetime | undefined {
  const s = isSpaceCode(value.charCodeAt(0)) || isSpaceCode(value.charCodeAt(value.length - 1)) ? value.trim() : value;
  const len = s.length;
  if (len < 4) return undefined;
  const year = digits(s, 0, 4);
  if (year < 0) return undefined;
  if (len === 4) return { ms: utc(year, 1, 1), granularity: 'year', zoned: true };
  if (s[4] !== '-' || len < 7) return undefined;
  const month = digits(s, 5, 2);
  if (month < 1 || month > 12) return undefined;
  if (len === 7) return { ms: utc(year, month, 1), granularity: 'month', zoned: true };
  if (s[7] !== '-' || len < 10) return undefined;
  const day = digits(s, 8, 2);
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  if (len === 10) return { ms: utc(year, month, day), granularity: 'day', zoned: true };
  if ((s[10] !== 'T' && s[10] !== 't' && !(lenient && s[10] === ' ')) || len < 16 || s[13] !== ':') return undefined;
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return undefined;
  let i = 16;
  let second = 0;
  let millis = 0;
  let granularity: DatetimeGranularity = 'minute';
  if (s[i] === ':') {
    second = digits(s, 17, 2);
    if (second < 0 || second > 59 || len < 19) return undefined;
    granularity = 'second';
    i = 19;
    if (s[i] === '.') {
      i++;
      const start = i;
      while (i < len && s.charCodeAt(i) >= D0 && s.charCodeAt(i) <= D0 + 9) i++;
      if (i === start) return undefined;
      millis = Math.floor(Number(`0.${s.slice(start, i)}`) * 1000 + 1e-6);
      granularity = 'fraction';
    }
  }
  let offsetMin = 0;
  let zoned = true;
  if (i === len) {
    if (!lenient) return undefined;
    zoned = false;
  } else if (s[i] === 'Z' || s[i] === 'z') {
    if (i + 1 !== len) return undefined;
  } else if (s[i] === '+' || s[i] === '-') {
    if (len !== i + 6 || s[i + 3] !== ':') return undefined;
    const oh = digits(s, i + 1, 2);
    const om = digits(s, i + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMin = (oh * 60 + om) * (s[i] === '-' ? -1 : 1);
  } else {
    return undefined;
  }
  const ms = utc(year, month, day, hour, minute, second, millis) - offsetMin * 60_000;
  return { ms, granularity, zoned };
}

/**
 * Formats a time as a complete W3C Datetime in UTC, `YYYY-MM-DDThh:mm:ss[.sss]Z`, the form Z39.99 §7
 * recommends. Milliseconds appear only when not zero.
 * @example formatW3CDatetime(Date.UTC(2013, 0, 3, 9)) === '2013-01-03T09:00:00Z'
 */
export function formatW3CDatetime(time: number | Date): string {
  const ms = typeof time === 'number' ? time : time.getTime();
  const iso = new Date(ms).toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, 19)}Z` : iso;
}

/**
 * Normalises any W3C Datetime to UTC `Z` form, keeping date-only granularities as they are.
 * Returns undefined if `value` is not a W3C Datetime.
 */
export function normalizeW3CDatetime(value: string, lenient = false): string | undefined {
  const d = parseW3CDatetime(value, lenient);
  if (!d) return undefined;
  if (d.granularity === 'year' || d.granularity === 'month' || d.granularity === 'day') return value.trim();
  return formatW3CDatetime(d.ms);
}
