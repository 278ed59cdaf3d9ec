/**
 * The aggregate's engines in its configuration: `state: postgres://…`, `out: s3://…` with `work` and `base-url`,
 * and the CLI's `--state`; bad values refused with the line and the field (exit 2), the password never repeated.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAggregateConfig, type ConfigIssue } from '../src/aggregate/config.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { configIssues } from './helpers/aggregate-config.js';

const issues = (text: string): ConfigIssue[] => configIssues(text, 's3cr3t');

void test('state and out: s3:// are read; work is the local folder', () => {
  const c = parseAggregateConfig('out: ./agg\nstate: postgres://rs:s3cr3t@db:5433/agg\nsources: []\n', '/etc/agg.yaml');
  assert.equal(c.state, 'postgres://rs:s3cr3t@db:5433/agg');
  assert.equal(c.out, '/etc/agg');
  assert.equal(c.s3, undefined);
  const s = parseAggregateConfig('base-url: https://agg.example.org\nout: s3://agg-bucket/pub/x/\nwork: ./work\nstate: postgres://rs@db/agg\nsources: []\n', '/etc/agg.yaml');
  assert.deepEqual(s.s3, { location: 's3://agg-bucket/pub/x', bucket: 'agg-bucket', prefix: 'pub/x' });
  assert.equal(s.out, '/etc/work');
});

void test('bad engines are refused with the line and the field', () => {
  assert.deepEqual(
    issues('out: ./agg\nstate: mysql://rs:s3cr3t@db/agg\nsources: []\n').map((i) => [i.line, i.field]),
    [[2, 'state']],
  );
  assert.deepEqual(
    issues('out: s3://agg-bucket/pub\nsources: []\n').map((i) => [i.line, i.field]),
    [
      [1, 'base-url'],
      [1, 'work'],
    ],
  );
  assert.deepEqual(issues('out: ./agg\nwork: ./w\nsources: []\n').map((i) => [i.line, i.field]), [[2, 'work']]);
  assert.deepEqual(issues('base-url: http://x/\nout: s3://Bad_Bucket/pub\nwork: ./w\nsources: []\n').map((i) => [i.line, i.field]), [[2, 'out']]);
  // dumps are not published into a bucket yet: refused, not silently left out
  const dumps = issues('base-url: http://x/\nout: s3://agg-bucket/pub\nwork: ./w\nstate: postgres://rs@db/agg\ndumps: true\nsources: []\n');
  assert.deepEqual(dumps.map((i) => [i.line, i.field]), [[5, 'dumps']]);
  assert.match(dumps[0]!.message, /not offered yet with out: s3:/);
});

void test('the CLI: a bad --state and an s3:// out without a state exit 2 before anything starts, no password shown', async () => {
  const { dir, cleanup } = await tempDir('rs-agg-engines-');
  try {
    const config = join(dir, 'agg.yaml');
    await writeFile(config, `out: ${join(dir, 'out')}\nsources: []\n`);
    const bad = await runCli(['aggregate', config, '--state', 'mysql://rs:s3cr3t@db/agg', '--port', '0']);
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /--state .* is not a PostgreSQL URL/);
    assert.ok(!bad.stderr.includes('s3cr3t'), bad.stderr);
    await writeFile(config, `base-url: http://127.0.0.1:1/\nout: s3://agg-bucket/pub\nwork: ${join(dir, 'work')}\nsources: []\n`);
    const noState = await runCli(['aggregate', config, '--port', '0']);
    assert.equal(noState.status, 2, noState.stderr);
    assert.match(noState.stderr, /give state: postgres:\/\/… in the configuration, or --state/);
  } finally {
    await cleanup();
  }
});
