/**
 * The aggregator's configuration: fields, defaults, derived ids, and errors that name the line and the field; the
 * CLI refuses a bad configuration with exit 2 before it starts anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAggregateConfig, sourceIdFromUrl } from '../src/aggregate/config.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { configIssues as issues } from './helpers/aggregate-config.js';

void test('the smallest configuration, YAML or JSON, with defaults and derived ids', () => {
  const yaml = parseAggregateConfig(
    `base-url: http://127.0.0.1:8095/     # where the aggregate is published
out: ./aggregate
sources:
  - url: https://repo.example.org/
  - url: https://other.example.org/.well-known/resourcesync
    interval: 300
`,
    '/etc/agg/aggregate.yaml',
  );
  assert.equal(yaml.baseUrl, 'http://127.0.0.1:8095/');
  assert.equal(yaml.out, '/etc/agg/aggregate');
  assert.equal(yaml.concurrency, 4);
  assert.deepEqual(
    yaml.sources.map((s) => [s.id, s.interval, s.mode, s.line]),
    [
      ['repo.example.org', 300, 'auto', 4],
      ['other.example.org', 300, 'auto', 5],
    ],
  );
  const json = parseAggregateConfig(
    JSON.stringify({ out: '/srv/agg', sources: [{ url: 'http://a.example:8080/data/', id: 'a', rate: 2.5, credentials: { bearer: 'A_TOKEN' }, 'capability-sets': ['http://a.example:8080/.resourcesync/x/capabilitylist.xml'] }] }),
    '/x/agg.json',
  );
  assert.equal(json.baseUrl, undefined, 'base-url is optional: the listening URL');
  assert.deepEqual(json.sources[0], {
    id: 'a',
    url: 'http://a.example:8080/data/',
    interval: 300,
    timeout: 3600,
    mode: 'auto',
    credentials: { scheme: 'bearer', env: 'A_TOKEN' },
    rate: 2.5,
    capabilitySets: ['http://a.example:8080/.resourcesync/x/capabilitylist.xml'],
    line: 1,
  });
});

void test('derived ids are stable, folder-safe and bounded', () => {
  assert.equal(sourceIdFromUrl('https://repo.example.org/oai/.well-known/resourcesync'), 'repo.example.org-oai');
  assert.equal(sourceIdFromUrl('http://127.0.0.1:8080/'), '127.0.0.1-8080');
  assert.equal(sourceIdFromUrl('http://[::1]:81/a b/%2e%2e/c'), '1-81-c');
  const long = sourceIdFromUrl(`https://example.org/${'x'.repeat(200)}`);
  assert.ok(long.length <= 64 && /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(long), long);
  assert.equal(long, sourceIdFromUrl(`https://example.org/${'x'.repeat(200)}`));
  assert.notEqual(long, sourceIdFromUrl(`https://example.org/${'x'.repeat(201)}`));
});

void test('every problem is reported with its line and field', () => {
  const found = issues(`base-url: ftp://nope/
out: ./o
colour: blue
sources:
  - url: http://a.example/
    interval: 0
    mode: sometimes
  - url: http://b.example/
    id: a.example
    credentials: { bearer: "not a name" }
    typo: 1
  - url: http://a.example/
  - id: ../etc
`);
  const got = found.map((i) => `${i.line} ${i.field}`);
  assert.deepEqual(got, [
    '1 base-url',
    '3 colour',
    '6 sources[0].interval',
    '7 sources[0].mode',
    '8 sources[1].id',
    '10 sources[1].credentials.bearer',
    '11 sources[1].typo',
    '12 sources[2].id',
    '13 sources[3].url',
    '13 sources[3].id',
  ]);
  assert.match(found.find((i) => i.field === 'sources[1].id')!.message, /'a\.example' is already the id of the Source at line 5/);
  assert.match(found.find((i) => i.field === 'sources[2].id')!.message, /already the id of the Source at line 5/);
  assert.match(found.find((i) => i.field === 'colour')!.message, /unknown field/);
});

void test('syntax errors, a missing out, the wrong shapes', () => {
  assert.deepEqual(issues('out: [unclosed\nsources: []\n').map((i) => i.line), [2]);
  assert.deepEqual(issues('sources: []\n').map((i) => i.field), ['out']);
  assert.deepEqual(issues('out: x\nsources: {a: 1}\n').map((i) => `${i.line} ${i.field}`), ['2 sources']);
  assert.deepEqual(issues('out: x\nsources:\n  - url: http://a/\n    mode: pull\n').map((i) => `${i.line} ${i.field}`), ['4 sources[0].mode']);
  assert.deepEqual(issues('out: x\nsources:\n  - url: http://a/\n    url-prefixes: [/x/]\n').map((i) => i.field), ['sources[0].url-prefixes[0]']);
  assert.deepEqual(issues('out: x\nout: y\nsources: []\n').map((i) => i.line), [2]);
  assert.deepEqual(issues('').map((i) => i.line), [1]);
});

void test('the CLI refuses a bad configuration with exit 2, naming file, line and field', async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-config-');
  t.after(cleanup);
  const file = join(dir, 'agg.yaml');
  await writeFile(file, 'out: ./o\nsources:\n  - url: http://a.example/\n    intervall: 5\n');
  const r = await runCli(['aggregate', file, '--port', '0']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /agg\.yaml:4: sources\[0\]\.intervall: unknown field/);
  assert.equal(r.stdout, '');
  const s = await runCli(['aggregate', 'status', file]);
  assert.equal(s.status, 2);
  const none = await runCli(['aggregate', 'status', join(dir, 'missing.yaml')]);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /cannot be read/);
  const usage = await runCli(['aggregate']);
  assert.equal(usage.status, 2);
  await writeFile(file, 'out: ./o\nsources: []\n');
  const never = await runCli(['aggregate', 'status', file]);
  assert.equal(never.status, 2);
  assert.match(never.stderr, /holds no aggregate status/);
});

void test('xmpp: names of environment variables, top level or per Source; the Source\'s own wins', () => {
  const c = parseAggregateConfig(
    `out: /srv/agg
xmpp: { jid: AGG_JID, password: AGG_PASS }
sources:
  - url: http://a.example/
  - url: http://b.example/
    xmpp: { jid: B_JID, password: B_PASS }
`,
    '/etc/agg.yaml',
  );
  assert.deepEqual(c.xmpp, { jid: 'AGG_JID', password: 'AGG_PASS' });
  assert.deepEqual(c.sources.map((s) => s.xmpp), [{ jid: 'AGG_JID', password: 'AGG_PASS' }, { jid: 'B_JID', password: 'B_PASS' }]);
  const bad = issues(`out: /srv/agg
xmpp: { jid: agg@example.org, password: AGG_PASS, node: x }
sources:
  - url: http://a.example/
    xmpp: { jid: A_JID }
`);
  assert.deepEqual(
    bad.map((i) => [i.line, i.field]),
    [
      [2, 'xmpp.node'],
      [2, 'xmpp.jid'],
      [5, 'sources[0].xmpp.password'],
    ],
  );
  assert.match(bad.find((i) => i.field === 'xmpp.jid')!.message, /is not the name of an environment variable/);
});
