/**
 * The configuration fields of scheduling and filtering: `schedule` (never with `interval`), `url-prefixes`,
 * `origin-rate`; each problem named with its line and field, and refused by the CLI with exit 2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAggregateConfig } from '../src/aggregate/config.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { configIssues as issues } from './helpers/aggregate-config.js';

void test('schedule, url-prefixes and origin-rate are read', () => {
  const config = parseAggregateConfig(
    `out: ./o
origin-rate: 2.5
sources:
  - url: http://a.example/
    schedule: "*/15 * * * *"
    url-prefixes:
      - http://a.example/oai/
      - HTTP://A.example/data/
  - url: http://b.example/
`,
    '/etc/agg.yaml',
  );
  assert.equal(config.originRate, 2.5);
  assert.equal(config.sources[0]!.schedule, '*/15 * * * *');
  assert.deepEqual(config.sources[0]!.urlPrefixes, ['http://a.example/oai/', 'HTTP://A.example/data/']);
  assert.equal(config.sources[1]!.schedule, undefined);
  assert.equal(config.sources[1]!.urlPrefixes, undefined);
  assert.equal(parseAggregateConfig('out: o\nsources: []\n', '/x.yaml').originRate, undefined);
});

void test('a bad schedule, both interval and schedule, bad prefixes and a bad origin-rate are named with line and field', () => {
  const found = issues(`out: ./o
origin-rate: 0
sources:
  - url: http://a.example/
    schedule: "61 * * * *"
  - url: http://b.example/
    interval: 60
    schedule: "@daily"
  - url: http://c.example/
    schedule: 5
  - url: http://d.example/
    url-prefixes: [/oai/, "ftp://d.example/", http://d.example/ok/]
  - url: http://e.example/
    url-prefixes: []
`);
  const got = found.map((i) => `${i.line} ${i.field}: ${i.message}`);
  assert.deepEqual(got, [
    "2 origin-rate: '0' is not a positive number",
    "5 sources[0].schedule: '61 * * * *': minute 61 is out of range 0–59",
    '8 sources[1].schedule: give either interval or schedule, not both',
    "10 sources[2].schedule: '5' is not a schedule: expected 5 fields (minute hour day-of-month month day-of-week) in quotes",
    "12 sources[3].url-prefixes[0]: '/oai/' is not an absolute http(s) URL (without user name or password)",
    "12 sources[3].url-prefixes[1]: 'ftp://d.example/' is not an absolute http(s) URL (without user name or password)",
    '14 sources[4].url-prefixes: expected a non-empty list of URL prefixes',
  ]);
});

void test('the CLI refuses a bad schedule with exit 2, naming the file, the line and the field', async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-schedule-config-');
  t.after(cleanup);
  const file = join(dir, 'agg.yaml');
  await writeFile(file, 'out: ./o\nsources:\n  - url: http://a.example/\n  - url: http://b.example/\n  - url: http://c.example/\n    schedule: "61 * * * *"\n');
  const r = await runCli(['aggregate', file, '--port', '0']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /agg\.yaml:6: sources\[2\]\.schedule: '61 \* \* \* \*': minute 61 is out of range 0–59/);
  assert.equal(r.stdout, '');
});
