import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlanItem } from '../destination/plan.js';
import { appliedOrder, MAX_APPLIED } from './source-mirror.js';

const item = (path: string, action: PlanItem['action'], datetime?: string, extra: Partial<PlanItem> = {}): PlanItem => ({
  url: `http://127.0.0.1/${path}`,
  path,
  action,
  reason: action === 'delete' ? 'deleted-at-source' : action === 'unchanged' ? 'same' : 'missing',
  ...(datetime === undefined ? {} : { datetime }),
  ...extra,
});

void test('appliedOrder: list items as heard, then changes by datetime; unchanged, kept and unmapped items left out', () => {
  const order = appliedOrder();
  // heard out of order (lookups of resources fetched at once end in any order)
  order.onPlan(item('r2.txt', 'create'));
  order.onPlan(item('r1.txt', 'update'));
  order.onPlan(item('a.txt', 'create', '2026-01-02T00:00:02Z'));
  order.onPlan(item('c.txt', 'create', '2026-01-02T00:00:01Z'));
  order.onPlan(item('same.txt', 'unchanged', '2026-01-02T00:00:00Z'));
  order.onPlan(item('kept.txt', 'delete', '2026-01-02T00:00:00Z', { kept: true }));
  order.onPlan({ url: 'http://elsewhere/x', action: 'create', reason: 'missing' });
  order.onPlan(item('b.txt', 'delete', '2026-01-02T00:00:03Z'));
  order.onPlan(item('d.txt', 'update', '2026-01-02T00:00:01Z'));
  assert.deepEqual(order.take(), ['r2.txt', 'r1.txt', 'c.txt', 'd.txt', 'a.txt', 'b.txt']);
  assert.deepEqual(order.take(), [], 'taken: it starts over');
});

void test('appliedOrder: past MAX_APPLIED paths the order is given up (undefined), then starts over', () => {
  const order = appliedOrder();
  for (let i = 0; i <= MAX_APPLIED; i++) order.onPlan(item(`f${i}`, 'create'));
  assert.equal(order.take(), undefined);
  order.onPlan(item('next.txt', 'create'));
  assert.deepEqual(order.take(), ['next.txt']);
});
