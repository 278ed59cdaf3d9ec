/**
 * Every example of ResourceSync Change Notification 1.0.1 and Framework Notification 1.0.1
 * (copied into test/fixtures/notification/): XML payloads parse, validate without issues and
 * round-trip; HTTP messages carry the Link relations and form parameters the specs require.
 * Plus the payload builders and the rules particular to notifications.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from '../src/core/xml/read-document.js';
import { writeDocumentString } from '../src/core/xml/write-document.js';
import { validateDocument } from '../src/core/validate/index.js';
import { parseLinkHeader } from '../src/core/link-header.js';
import {
  changeNotification,
  frameworkChangeAllowed,
  frameworkNotification,
  notificationWindow,
} from '../src/core/model/notification.js';
import { FIXTURES } from './helpers/paths.js';

const DIR = join(FIXTURES, 'notification');
const files = readdirSync(DIR);

/** A printed HTTP message: start line, headers (folded lines joined), body. */
function parseHttp(text: string): { start: string; headers: Map<string, string>; body: string } {
  const [head = '', body = ''] = text.split(/\r?\n\r?\n/, 2);
  const lines = head.split(/\r?\n/);
  let start = lines.shift() ?? '';
  while (lines[0]?.startsWith('&')) start += lines.shift()!; // the request line of the verify examples wraps
  const headers = new Map<string, string>();
  let last = '';
  for (const line of lines) {
    if (/^\s/.test(line)) headers.set(last, `${headers.get(last)!} ${line.trim()}`);
    else {
      const i = line.indexOf(':');
      last = line.slice(0, i).toLowerCase();
      headers.set(last, line.slice(i + 1).trim());
    }
  }
  return { start, headers, body };
}

function codes(
  doc: Parameters<typeof validateDocument>[0],
  options: Parameters<typeof validateDocument>[1] = {},
): string[] {
  return validateDocument(doc, options).map((i) => i.code);
}

void describe('notification examples (XML)', () => {
  const xml = files.filter((f) => f.endsWith('.xml'));
  void it('there are the five XML examples', () => {
    assert.deepEqual(xml.sort(), [
      'change-notification-ex-1.xml',
      'change-notification-ex-7.xml',
      'framework-notification-ex-1.xml',
      'framework-notification-ex-2.xml',
      'framework-notification-ex-8.xml',
    ]);
  });
  for (const f of xml) {
    void it(`${f} is valid (strict, 1.1) and round-trips`, async () => {
      const doc = await parseDocument(readFileSync(join(DIR, f)));
      assert.deepEqual(validateDocument(doc, { spec: '1.1' }), []);
      const again = await parseDocument(Buffer.from(writeDocumentString(doc)));
      assert.deepEqual(again.md, doc.md);
      assert.deepEqual(again.ln, doc.ln);
      assert.deepEqual(
        again.entries.map(({ line: _l, ...e }) => e),
        doc.entries.map(({ line: _l, ...e }) => e),
      );
    });
  }
  void it('Change Notification Example 1: the window and the entries in forward chronological order', async () => {
    const doc = await parseDocument(readFileSync(join(DIR, 'change-notification-ex-1.xml')));
    assert.deepEqual(notificationWindow(doc), { from: '2013-01-03T00:00:00Z', until: '2013-01-03T00:10:00Z' });
    assert.deepEqual(
      doc.entries.map((e) => [e.loc, e.md?.change, e.md?.datetime]),
      [
        ['http://example.com/res1', 'created', '2013-01-03T00:07:22Z'],
        ['http://example.com/res2', 'updated', '2013-01-03T00:08:52Z'],
      ],
    );
    assert.match(doc.entries[1]!.md!.hash!, /^md5:1e0d\S+\s+sha-256:854f\S+$/);
  });
  void it('Framework Notification Example 2: the index link of a document under an index is kept', async () => {
    const doc = await parseDocument(readFileSync(join(DIR, 'framework-notification-ex-2.xml')));
    assert.deepEqual(doc.entries[0]!.ln, [
      { rel: 'index', href: 'http://example.com/dataset1/resourcelist-index.xml' },
    ]);
    assert.deepEqual(
      doc.entries.map((e) => [e.md?.capability, e.md?.change]),
      [
        ['resourcelist', 'created'],
        ['resourcedump', 'created'],
        ['changelist', 'updated'],
      ],
    );
  });
  void it('the Capability Lists of CN Example 7 and FN Example 8 advertise a channel with its hub', async () => {
    for (const [f, capability, topic] of [
      ['change-notification-ex-7.xml', 'change-notification', 'http://example.com/dataset1/change/'],
      ['framework-notification-ex-8.xml', 'framework-notification', 'http://example.com/dataset1/framework/'],
    ] as const) {
      const doc = await parseDocument(readFileSync(join(DIR, f)));
      const channel = doc.entries.find((e) => e.md?.capability === capability);
      assert.equal(channel?.loc, topic);
      assert.deepEqual(channel?.ln, [{ rel: 'hub', href: 'http://hub.example.org/websub/' }]);
    }
  });
});

void describe('notification examples (HTTP messages)', () => {
  for (const f of files.filter((x) => x.endsWith('.http'))) {
    const msg = parseHttp(readFileSync(join(DIR, f), 'utf8'));
    const topic = f.startsWith('change')
      ? 'http://example.com/dataset1/change/'
      : 'http://example.com/dataset1/framework/';
    if (msg.headers.get('content-type') === 'application/xml') {
      void it(`${f}: a publish or delivery POST with Link rel=self (the topic) and rel=hub`, () => {
        assert.match(msg.start, /^POST /);
        const links = parseLinkHeader(msg.headers.get('link')!);
        const rel = (r: string): string | undefined => links.find((l) => l.rel.includes(r))?.target;
        assert.equal(rel('self'), topic);
        assert.equal(rel('hub'), 'http://hub.example.org/websub/');
        assert.equal(rel('resourcesync'), 'http://www.example.com/dataset1/capabilitylist.xml');
        assert.match(msg.body, /^<\?xml[^>]*>\s*<urlset/);
      });
    } else if (msg.headers.get('content-type') === 'application/x-www-form-urlencoded') {
      void it(`${f}: a subscription request with hub.mode, hub.topic, hub.callback, hub.lease_seconds`, () => {
        const form = new URLSearchParams(msg.body.replace(/\r?\n/g, ''));
        assert.equal(form.get('hub.mode'), 'subscribe');
        assert.match(form.get('hub.topic')!, /^http:\/\/Aexample\.com\/dataset1\/(change|framework)\/$/); // the specs' stray 'A'
        assert.equal(form.get('hub.callback'), 'http://destination.example.net/callback/');
        assert.equal(form.get('hub.lease_seconds'), '3600');
      });
    } else if (msg.start.startsWith('GET ')) {
      void it(`${f}: a verification of intent carries hub.challenge and hub.lease_seconds`, () => {
        const url = new URL(msg.start.split(' ')[1]!, 'http://destination.example.net');
        assert.equal(url.pathname, '/callback/');
        assert.equal(url.searchParams.get('hub.mode'), 'subscribe');
        assert.equal(url.searchParams.get('hub.challenge'), 'c0cc4630-5116-11e3-8f96-0800200c9a66');
        assert.equal(url.searchParams.get('hub.lease_seconds'), '2400');
      });
    } else {
      void it(`${f}: the Destination echoes the challenge in a 200 body`, () => {
        assert.match(msg.start, /^HTTP\/1\.1 200/);
        assert.equal(msg.body.trim(), 'c0cc4630-5116-11e3-8f96-0800200c9a66');
        assert.equal(Number(msg.headers.get('content-length')), msg.body.trim().length);
      });
    }
  }
});

void describe('notification payloads: builders and rules', () => {
  void it('changeNotification() writes a valid payload that reads back with its window', async () => {
    const doc = changeNotification({
      from: '2026-11-23T10:00:00.000Z',
      until: '2026-11-23T10:00:00.050Z',
      up: 'http://127.0.0.1:1/set/capabilitylist.xml',
      entries: [
        { loc: 'http://127.0.0.1:1/a', md: { change: 'created', datetime: '2026-11-23T10:00:00.010Z', length: '3' } },
        { loc: 'http://127.0.0.1:1/b', md: { change: 'deleted', datetime: '2026-11-23T10:00:00.040Z' } },
      ],
    });
    const back = await parseDocument(Buffer.from(writeDocumentString(doc)));
    assert.deepEqual(validateDocument(back), []);
    assert.deepEqual(notificationWindow(back), { from: '2026-11-23T10:00:00.000Z', until: '2026-11-23T10:00:00.050Z' });
  });
  void it('a Change Notification needs from and until, a change per entry, and forward chronological order', () => {
    const doc = changeNotification({
      from: '2013-01-03T00:00:00Z',
      until: '2013-01-03T00:10:00Z',
      up: 'http://e.com/cl.xml',
      entries: [
        { loc: 'http://e.com/a', md: { change: 'updated', datetime: '2013-01-03T00:08:00Z' } },
        { loc: 'http://e.com/b', md: { change: 'created', datetime: '2013-01-03T00:07:00Z' } },
      ],
    });
    assert.deepEqual(codes(doc), ['changes-out-of-order']);
    delete doc.md!.from;
    delete doc.md!.until;
    assert.deepEqual(codes(doc).sort(), ['changes-out-of-order', 'from-missing', 'until-missing']);
  });
  void it('Framework Notification Table 2: allowed pairs pass, the others are errors citing §2.1', () => {
    assert.equal(frameworkChangeAllowed('resourcedump', 'created'), true);
    assert.equal(frameworkChangeAllowed('resourcedump', 'updated'), false);
    assert.equal(frameworkChangeAllowed('resourcelist', 'deleted'), false);
    assert.equal(frameworkChangeAllowed('capabilitylist', 'deleted'), true);
    assert.equal(frameworkChangeAllowed('changelist-archive', 'updated'), true);
    const ok = frameworkNotification({
      up: 'http://e.com/set/capabilitylist.xml',
      changes: [
        {
          loc: 'http://e.com/set/resourcelist-1.xml',
          capability: 'resourcelist',
          change: 'created',
          index: 'http://e.com/set/resourcelist.xml',
        },
        {
          loc: 'http://e.com/set/changelist.xml',
          capability: 'changelist',
          change: 'updated',
          datetime: '2026-11-23T10:00:00Z',
        },
        { loc: 'http://e.com/set/capabilitylist.xml', capability: 'capabilitylist', change: 'deleted' },
      ],
    });
    assert.deepEqual(validateDocument(ok), []);
    const bad = frameworkNotification({
      changes: [
        { loc: 'http://e.com/set/resourcelist.xml', capability: 'resourcelist', change: 'deleted' },
        { loc: 'http://e.com/set/change/', capability: 'change-notification', change: 'created' },
      ],
    });
    const issues = validateDocument(bad).filter((i) => i.code === 'framework-change-not-allowed');
    assert.deepEqual(
      issues.map((i) => i.path),
      ['urlset/url[1]/rs:md/@change', 'urlset/url[2]/rs:md/@change'],
    );
    assert.equal(issues[0]!.section, 'ResourceSync Framework Notification §2.1, Table 2');
  });
  void it('the 1.0 name changelist-notification: an error in strict mode, tolerated in lenient mode', () => {
    const doc = changeNotification({
      from: '2013-01-03T00:00:00Z',
      until: '2013-01-03T00:10:00Z',
      up: 'http://e.com/cl.xml',
      entries: [],
    });
    doc.md!.capability = 'changelist-notification';
    assert.deepEqual(codes(doc), ['capability-legacy-name']);
    assert.deepEqual(codes(doc, { mode: 'lenient' }), ['tolerated-capability-legacy-name']);
  });
  void it('a Change Notification is never a <sitemapindex>', () => {
    const doc = changeNotification({ from: '2013-01-03T00:00:00Z', until: '2013-01-03T00:10:00Z', entries: [] });
    assert.ok(codes({ ...doc, root: 'sitemapindex' }).includes('capability-root-mismatch'));
  });
});
