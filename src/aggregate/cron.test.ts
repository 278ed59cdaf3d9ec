import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkCron, nextCronTime, parseCron } from './cron.js';

const at = (iso: string): number => Date.parse(iso);
const next = (expr: string, after: string): string | undefined => {
  const t = nextCronTime(parseCron(expr), at(after));
  return t === undefined ? undefined : new Date(t).toISOString();
};

void describe('cron schedules', () => {
  void it('steps, ranges, lists and names give the next minute strictly after the time, in UTC', () => {
    assert.equal(next('*/15 * * * *', '2026-11-28T00:41:19Z'), '2026-11-28T00:45:00.000Z');
    assert.equal(next('*/15 * * * *', '2026-11-28T00:45:00Z'), '2026-11-28T01:00:00.000Z', 'strictly after');
    assert.equal(next('0 3 * * *', '2026-11-28T05:00:00Z'), '2026-11-29T03:00:00.000Z');
    assert.equal(next('30 9-17/4 * * mon-fri', '2026-11-28T00:00:00Z'), '2026-11-30T09:30:00.000Z', '28 Nov 2026 is a Saturday');
    assert.equal(next('5,10 0 1 jan,jul *', '2026-11-28T00:00:00Z'), '2027-01-01T00:05:00.000Z');
    assert.equal(next('0 0 29 2 *', '2026-03-01T00:00:00Z'), '2028-02-29T00:00:00.000Z', 'the next leap day');
    assert.equal(next('0 12 * * 7', '2026-11-28T00:00:00Z'), '2026-11-29T12:00:00.000Z', '7 is Sunday too');
    assert.equal(next('@hourly', '2026-11-28T00:41:00Z'), '2026-11-28T01:00:00.000Z');
    assert.equal(next('0 0 1/10 * *', '2026-11-02T00:00:00Z'), '2026-11-11T00:00:00.000Z');
  });

  void it('with both day fields restricted, a day matching either is due (as cron does)', () => {
    // the 13th, or any Friday: 4 Dec 2026 is a Friday, before 13 Dec
    assert.equal(next('0 0 13 * fri', '2026-11-28T00:00:00Z'), '2026-12-04T00:00:00.000Z');
    // only the day of the week restricted: Fridays alone
    assert.equal(next('0 0 * * fri', '2026-12-04T00:00:00Z'), '2026-12-11T00:00:00.000Z');
    // a day field starting with '*' is not restricted, a step included (Vixie cron): the 1st, 11th, 21st or 31st that
    // is also a Saturday or Sunday
    assert.equal(next('0 0 */10 * sun,sat', '2026-08-26T12:21:00Z'), '2026-10-11T00:00:00.000Z');
  });

  void it('says what is wrong, field by field', () => {
    assert.equal(checkCron('61 * * * *'), 'minute 61 is out of range 0–59');
    assert.equal(checkCron('* 24 * * *'), 'hour 24 is out of range 0–23');
    assert.equal(checkCron('* * 0 * *'), 'day-of-month 0 is out of range 1–31');
    assert.equal(checkCron('* * * 13 *'), 'month 13 is out of range 1–12');
    assert.equal(checkCron('* * * * 8'), 'day-of-week 8 is out of range 0–7');
    assert.equal(checkCron('* * * * funday'), "day-of-week 'funday' is not a number or a name");
    assert.equal(checkCron('*/0 * * * *'), "minute step '0' is out of range 1–59");
    assert.equal(checkCron('10-5 * * * *'), "minute range '10-5' ends before it starts");
    assert.equal(checkCron('* * * *'), 'expected 5 fields (minute hour day-of-month month day-of-week), found 4');
    assert.equal(checkCron(''), 'expected 5 fields (minute hour day-of-month month day-of-week), found 0');
    assert.equal(checkCron('1.5 * * * *'), "minute '1.5' is not *, a number, a range or a step");
    assert.equal(checkCron('0 0 30 2 *'), 'no day ever matches');
    assert.equal(checkCron('* * * * * *'), 'expected 5 fields (minute hour day-of-month month day-of-week), found 6');
    assert.throws(() => parseCron('61 * * * *'), /Schedule '61 \* \* \* \*': minute 61 is out of range 0–59\./);
  });
});
