import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressBar, type ProgressState } from './progress.js';

/** The lines a bar draws on a terminal-like stream of `columns` columns. */
function draw(states: ProgressState[], columns = 160): string[] {
  const lines: string[] = [];
  const tty = { isTTY: true, columns, write: (s: string) => lines.push(s.replace('\r\u001b[2K', '')) > 0 } as unknown as NodeJS.WriteStream;
  const bar = new ProgressBar(tty);
  for (const s of states) bar.update(s, true);
  return lines;
}

void test('progress: a known total draws done/total, a bar and an ETA', () => {
  const [line] = draw([{ label: 'baseline', done: 10, total: 40, bytes: 0, failed: 0 }]);
  assert.match(line!, /^baseline \[#+-+\] 10\/40 resources, .* ETA \d+:\d\d$/);
});

void test('progress: an estimate is drawn with ~ (count and ETA), never below what is done, never n/0', () => {
  const [est, low, zero, none] = draw([
    { label: 'baseline', done: 10, estimate: 400, bytes: 0, failed: 0 },
    { label: 'baseline', done: 10, estimate: 4, bytes: 0, failed: 0 },
    { label: 'baseline', done: 10, estimate: 0, bytes: 0, failed: 0 },
    { label: 'baseline', done: 10, bytes: 0, failed: 0 },
  ]);
  assert.match(est!, /^baseline \[#?-+\] 10\/~400 resources, .* ETA ~\d+:\d\d$/);
  assert.match(low!, / 10\/~10 resources, /);
  assert.match(zero!, / 10 of \? resources, /);
  assert.match(none!, / 10 of \? resources, /);
  assert.doesNotMatch(none!, /ETA/);
});

void test('progress: a known total wins over an estimate; a total below done is not drawn', () => {
  const [known, below] = draw([
    { label: 'baseline', done: 10, total: 20, estimate: 400, bytes: 0, failed: 0 },
    { label: 'baseline', done: 10, total: 5, bytes: 0, failed: 0 },
  ]);
  assert.match(known!, / 10\/20 resources, /);
  assert.match(below!, / 10 of \? resources, /);
});
