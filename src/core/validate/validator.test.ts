import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Entry, ResourceSyncDocument } from '../model/types.js';
import { RS_NS } from '../constants.js';
import { ISSUE_CODES, hasErrors, type IssueCode, type ValidateOptions, type ValidationIssue } from './codes.js';
import { MESSAGES, formatMessage } from './messages.js';
import { createValidator, validate, validateDocument } from './validator.js';

const UP = { rel: 'up', href: 'http://example.com/capabilitylist.xml' };

function resourceList(entries: Entry[], md: ResourceSyncDocument['md'] = { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' }): ResourceSyncDocument {
  return { root: 'urlset', md, ln: [UP], entries };
}

function changeList(entries: Entry[], md: ResourceSyncDocument['md'] = { capability: 'changelist', from: '2013-01-03T00:00:00Z' }): ResourceSyncDocument {
  return { root: 'urlset', md, ln: [UP], entries };
}

function codes(issues: ValidationIssue[]): IssueCode[] {
  return issues.map((i) => i.code);
}

function check(doc: ResourceSyncDocument, options: ValidateOptions = {}): IssueCode[] {
  return codes(validateDocument(doc, options));
}

void describe('message table', () => {
  void it('has a message, a severity and a section for every code, and no extra entries', () => {
    for (const code of ISSUE_CODES) {
      const def = MESSAGES[code];
      assert.ok(def, code);
      assert.ok(def.message.length > 10, code);
      assert.ok(def.section.length > 0, code);
      assert.ok(def.severity === 'error' || def.severity === 'warning', code);
    }
    assert.deepEqual(Object.keys(MESSAGES).sort(), [...ISSUE_CODES].sort());
  });
  void it('codes are unique kebab-case', () => {
    assert.equal(new Set(ISSUE_CODES).size, ISSUE_CODES.length);
    for (const c of ISSUE_CODES) assert.match(c, /^[a-z0-9]+(-[a-z0-9]+)*$/);
  });
  void it('tolerated codes are warnings', () => {
    for (const c of ISSUE_CODES) if (c.startsWith('tolerated-')) assert.equal(MESSAGES[c].severity, 'warning');
  });
  void it('fills placeholders', () => {
    assert.equal(formatMessage('length-invalid', { value: '-1' }), "length '-1' is not a non-negative integer");
  });
});

void describe('validateDocument: document level', () => {
  void it('accepts a correct Resource List', () => {
    const doc = resourceList([
      { loc: 'http://example.com/res1', lastmod: '2013-01-02T13:00:00Z', md: { hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6', length: '8876', type: 'text/html' } },
    ]);
    assert.deepEqual(validateDocument(doc), []);
  });
  void it('reports a missing rs:md, capability, at and from', () => {
    assert.deepEqual(check({ root: 'urlset', ln: [], entries: [] }), ['md-missing']);
    assert.deepEqual(check({ root: 'urlset', md: {}, ln: [], entries: [] }), ['capability-missing']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist' })), ['at-missing']);
    assert.deepEqual(check(changeList([], { capability: 'changelist' })), ['from-missing']);
  });
  void it('reports unknown capabilities, root mismatches and misnamed indexes', () => {
    assert.deepEqual(check({ root: 'urlset', md: { capability: 'nonsense' }, ln: [], entries: [] }), ['capability-unknown']);
    assert.deepEqual(check({ root: 'sitemapindex', md: { capability: 'changedump-manifest', from: '2013-01-01T00:00:00Z' }, ln: [UP], entries: [] }), [
      'capability-root-mismatch',
    ]);
    assert.deepEqual(check({ root: 'sitemapindex', md: { capability: 'changelistindex', from: '2013-01-01T00:00:00Z' }, ln: [UP], entries: [] }), [
      'capability-index-name',
    ]);
    const lenient = validateDocument({ root: 'sitemapindex', md: { capability: 'changelistindex', from: '2013-01-01T00:00:00Z' }, ln: [UP], entries: [] }, { mode: 'lenient' });
    assert.deepEqual(codes(lenient), ['tolerated-capability-index-name']);
    assert.equal(hasErrors(lenient), false);
  });
  void it('forbids at in change documents and from in snapshot documents (Appendix A)', () => {
    assert.deepEqual(check(changeList([], { capability: 'changelist', from: '2013-01-01T00:00:00Z', at: '2013-01-01T00:00:00Z' })), ['at-forbidden']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-01-01T00:00:00Z', until: '2013-01-01T00:00:00Z' })), [
      'from-forbidden',
      'until-without-from',
    ]);
  });
  void it('reports until before from and completed before at', () => {
    assert.deepEqual(check(changeList([], { capability: 'changelist', from: '2013-01-02T00:00:00Z', until: '2013-01-01T00:00:00Z' })), ['until-before-from']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-01-02T00:00:00Z', completed: '2013-01-01T00:00:00Z' })), [
      'completed-before-at',
    ]);
  });
  void it('checks W3C Datetime syntax and recommends UTC at the top level', () => {
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-13-01' })), ['datetime-invalid']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-01-01' })), ['datetime-not-utc']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-01-01T10:00:00+01:00' })), ['datetime-not-utc']);
    assert.deepEqual(check(resourceList([], { capability: 'resourcelist', at: '2013-01-01T10:00:00' })), ['datetime-invalid']);
    const lenient = validateDocument(resourceList([], { capability: 'resourcelist', at: '2013-01-01T10:00:00' }), { mode: 'lenient' });
    assert.deepEqual(codes(lenient), ['tolerated-datetime-no-zone']);
  });
  void it('requires the up link where the spec does, and only there', () => {
    const noUp: ResourceSyncDocument = { ...resourceList([]), ln: [] };
    const issues = validateDocument(noUp);
    assert.deepEqual(codes(issues), ['up-link-missing']);
    assert.equal(issues[0]!.section, 'Z39.99 §10.1');
    assert.deepEqual(check(noUp, { mode: 'lenient' }), ['tolerated-up-link-missing']);
    const sd: ResourceSyncDocument = { root: 'urlset', md: { capability: 'description' }, ln: [{ rel: 'describedby', href: 'http://e.com/about' }], entries: [] };
    assert.deepEqual(check(sd), []);
    assert.deepEqual(check({ ...sd, ln: [...sd.ln, UP] }), ['up-link-unexpected']);
    assert.deepEqual(check({ ...sd, ln: [] }), ['describedby-link-missing']);
    const cl: ResourceSyncDocument = { root: 'urlset', md: { capability: 'capabilitylist' }, ln: [{ rel: 'describedby', href: 'http://e.com/about' }], entries: [] };
    const clIssues = validateDocument(cl);
    assert.deepEqual(codes(clIssues), ['up-link-missing']);
    assert.match(clIssues[0]!.message, /Source Description/);
    assert.deepEqual(check({ ...resourceList([]), ln: [UP, UP] }), ['up-link-repeated']);
  });
  void it('checks rs:ln rel, href and pri', () => {
    const doc = resourceList([
      { loc: 'http://e.com/a', ln: [{ href: 'http://m.e.com/a', rel: 'duplicate', pri: '0' }, { rel: 'duplicate' }, { href: 'x', pri: '1000000' }, { rel: 'duplicate', href: 'y', pri: '999999' }] },
    ]);
    const issues = validateDocument(doc);
    assert.deepEqual(codes(issues), ['pri-out-of-range', 'ln-href-missing', 'ln-rel-missing', 'pri-out-of-range']);
    assert.equal(issues[0]!.path, 'urlset/url[1]/rs:ln[1]/@pri');
    assert.equal(issues[2]!.path, 'urlset/url[1]/rs:ln[3]/@rel');
    assert.deepEqual(check({ ...resourceList([]), ln: [UP, { rel: 'index' }] }), ['ln-href-missing']);
  });
  void it('reports prefixed ResourceSync attributes and unknown unprefixed ones', () => {
    const doc = resourceList([
      {
        loc: 'http://e.com/a',
        md: {
          extra: [
            { ns: RS_NS, prefix: 'rs', local: 'length', value: '1' },
            { ns: '', prefix: '', local: 'size', value: '1' },
            { ns: 'http://example.org/ext', prefix: 'x', local: 'size', value: '1' },
          ],
        },
      },
    ]);
    const issues = validateDocument(doc);
    assert.deepEqual(codes(issues), ['rs-attribute-prefixed', 'attribute-not-namespaced']);
    assert.equal(issues[0]!.path, 'urlset/url[1]/rs:md/@rs:length');
  });
});

void describe('validateDocument: entries', () => {
  void it('checks hashes: hex, digest length, syntax; unknown algorithms accepted', () => {
    const e = (hash: string): Entry => ({ loc: 'http://e.com/a', md: { hash } });
    assert.deepEqual(check(resourceList([e('md5:1584abdf8ebdc9802ac0c6a7402c03b6 sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784')])), []);
    assert.deepEqual(check(resourceList([e('MD5:1584ABDF8EBDC9802AC0C6A7402C03B6')])), []);
    assert.deepEqual(check(resourceList([e('sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709')])), []);
    assert.deepEqual(check(resourceList([e('md5:1584abdf8ebdc9802ac0c6a7402c03')])), ['hash-digest-length']);
    assert.deepEqual(check(resourceList([e('sha-256:f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj')])), ['hash-not-hex']);
    assert.deepEqual(check(resourceList([e('1584abdf8ebdc9802ac0c6a7402c03b6')])), ['hash-syntax']);
    assert.deepEqual(check(resourceList([e('md5:')])), ['hash-syntax']);
    assert.deepEqual(check(resourceList([e('blake3:anything-goes')])), []);
    assert.deepEqual(check(resourceList([e('urn:sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ')])), ['hash-not-hex']);
    assert.deepEqual(check(resourceList([e('urn:sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ')]), { mode: 'lenient' }), ['tolerated-hash-encoding']);
    assert.deepEqual(check(resourceList([e('md5:FYRrvf6rzZgCrAxqdALAOw==')]), { mode: 'lenient' }), ['tolerated-hash-encoding']);
    assert.deepEqual(check(resourceList([e('md5:zz%zz')]), { mode: 'lenient' }), ['hash-not-hex']);
  });
  void it('checks length, changefreq, priority, loc', () => {
    const doc = resourceList([
      { loc: 'http://e.com/a', md: { length: '-1' } },
      { loc: 'http://e.com/b', changefreq: 'sometimes', priority: '2' },
      { loc: '' },
      { loc: 'relative/c', changefreq: 'daily', priority: '0.5' },
      { loc: 'http://e.com/a' },
    ]);
    assert.deepEqual(check(doc), ['length-invalid', 'changefreq-invalid', 'priority-invalid', 'loc-missing', 'loc-not-absolute', 'loc-duplicate']);
  });
  void it('finds repeated locs by fingerprint without false alarms over 50,000 distinct ones', () => {
    const entries: Entry[] = [];
    for (let i = 0; i < 50_000; i++) entries.push({ loc: `http://example.com/dataset1/resources/item-${i}.html` });
    entries.push({ loc: 'http://example.com/dataset1/resources/item-4711.html' });
    const issues = validateDocument(resourceList(entries));
    assert.deepEqual(codes(issues), ['loc-duplicate']);
    assert.equal(issues[0]!.path, 'urlset/url[50001]/loc');
  });
  void it('requires lastmod and change in 1.0 Change Lists, only change in 1.1', () => {
    const doc = changeList([{ loc: 'http://e.com/a', md: { change: 'updated' } }, { loc: 'http://e.com/b', lastmod: '2013-01-03T01:00:00Z' }]);
    assert.deepEqual(check(doc, { spec: '1.0' }), ['lastmod-missing', 'change-missing']);
    assert.deepEqual(check(doc, { spec: '1.1' }), ['change-missing']);
    assert.deepEqual(check(changeList([{ loc: 'http://e.com/a', md: { change: 'modified' } }])), ['change-invalid']);
  });
  void it('checks forward chronological order (1.0 lastmod, 1.1 datetime)', () => {
    const doc = changeList([
      { loc: 'http://e.com/a', lastmod: '2013-01-03T02:00:00Z', md: { change: 'updated', datetime: '2013-01-03T01:00:00Z' } },
      { loc: 'http://e.com/b', lastmod: '2013-01-03T01:00:00Z', md: { change: 'updated', datetime: '2013-01-03T03:00:00Z' } },
      { loc: 'http://e.com/c', lastmod: '2013-01-03T01:00:00Z', md: { change: 'updated', datetime: '2013-01-03T03:00:00Z' } },
    ]);
    const v10 = validateDocument(doc, { spec: '1.0' });
    assert.deepEqual(codes(v10), ['datetime-unexpected', 'datetime-unexpected', 'changes-out-of-order', 'datetime-unexpected']);
    assert.equal(v10[2]!.path, 'urlset/url[2]');
    assert.deepEqual(check(doc, { spec: '1.1' }), []);
    const reversed = changeList([
      { loc: 'http://e.com/a', md: { change: 'updated', datetime: '2013-01-03T03:00:00Z' } },
      { loc: 'http://e.com/b', md: { change: 'updated', datetime: '2013-01-03T02:00:00Z' } },
      { loc: 'http://e.com/c', md: { change: 'updated', datetime: '2013-01-03T01:00:00Z' } },
    ]);
    assert.deepEqual(check(reversed), ['changes-out-of-order', 'changes-out-of-order']);
    const lenient = validateDocument(reversed, { mode: 'lenient' });
    assert.deepEqual(codes(lenient), ['tolerated-out-of-order']);
    assert.match(lenient[0]!.message, /2 out of place/);
  });
  void it('checks datetime within [from, until] in 1.1 and lastmod within it in 1.0 (warning)', () => {
    const md = { capability: 'changelist', from: '2013-01-02', until: '2013-01-03' };
    const doc = changeList(
      [
        { loc: 'http://e.com/a', lastmod: '2013-01-01T12:00:00Z', md: { change: 'created', datetime: '2013-01-02T12:00:00Z' } },
        { loc: 'http://e.com/b', lastmod: '2013-01-03T23:00:00Z', md: { change: 'updated', datetime: '2013-01-03T23:00:00Z' } },
        { loc: 'http://e.com/c', lastmod: '2013-01-04T00:00:00Z', md: { change: 'updated', datetime: '2013-01-04T00:00:00Z' } },
      ],
      md,
    );
    assert.deepEqual(check(doc, { spec: '1.1' }).filter((c) => c !== 'datetime-not-utc'), ['datetime-outside-interval']);
    const v10 = check(doc, { spec: '1.0' }).filter((c) => c !== 'datetime-not-utc' && c !== 'datetime-unexpected');
    assert.deepEqual(v10, ['lastmod-outside-interval', 'lastmod-outside-interval']);
  });
  void it('checks Capability Lists: capability per entry, once each', () => {
    const cl: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'capabilitylist' },
      ln: [UP, { rel: 'describedby', href: 'http://e.com/about' }],
      entries: [
        { loc: 'http://e.com/rl.xml', md: { capability: 'resourcelist' } },
        { loc: 'http://e.com/rl2.xml', md: { capability: 'resourcelist' } },
        { loc: 'http://e.com/x.xml' },
        { loc: 'http://e.com/y.xml', md: { capability: 'mystery' } },
        { loc: 'http://e.com/cli.xml', md: { capability: 'changelistindex' } },
        { loc: 'http://e.com/ra.xml', md: { capability: 'resourcelist-archive' }, lastmod: '2013-01-01T00:00:00Z' },
      ],
    };
    assert.deepEqual(check(cl), [
      'capability-duplicate',
      'entry-capability-missing',
      'entry-capability-unknown',
      'capability-index-name',
      'lastmod-discouraged',
    ]);
    assert.deepEqual(check(cl, { mode: 'lenient' }), [
      'tolerated-capability-duplicate',
      'entry-capability-missing',
      'entry-capability-unknown',
      'tolerated-capability-index-name',
      'lastmod-discouraged',
    ]);
  });
  void it('checks Source Description entries point to Capability Lists', () => {
    const sd: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'description' },
      ln: [{ rel: 'describedby', href: 'http://e.com/about' }],
      entries: [
        { loc: 'http://e.com/cl.xml', md: { capability: 'capabilitylist' } },
        { loc: 'http://e.com/cl2.xml' },
        { loc: 'http://e.com/rl.xml', md: { capability: 'resourcelist' } },
        { loc: 'http://e.com/x.xml', md: { type: 'application/xml' } },
      ],
    };
    assert.deepEqual(check(sd), ['entry-capability-invalid', 'entry-capability-missing']);
  });
  void it('checks manifest paths (not required for deleted)', () => {
    const rdm: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'resourcedump-manifest', at: '2013-01-03T09:00:00Z' },
      ln: [UP],
      entries: [
        { loc: 'http://e.com/a', md: { path: '/a', type: 'text/plain' } },
        { loc: 'http://e.com/b', md: { path: 'b', type: 'text/plain' } },
        { loc: 'http://e.com/c', md: { type: 'text/plain' } },
        { loc: 'http://e.com/d', md: { path: '/d' } },
      ],
    };
    assert.deepEqual(check(rdm), ['path-not-absolute', 'path-missing', 'type-missing']);
    const cdm: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'changedump-manifest', from: '2013-01-02T00:00:00Z' },
      ln: [UP],
      entries: [
        { loc: 'http://e.com/a', lastmod: '2013-01-02T01:00:00Z', md: { change: 'created', path: '/a', type: 'text/plain' } },
        { loc: 'http://e.com/b', lastmod: '2013-01-02T02:00:00Z', md: { change: 'deleted' } },
        { loc: 'http://e.com/c', lastmod: '2013-01-02T03:00:00Z', md: { change: 'updated', type: 'text/plain' } },
      ],
    };
    assert.deepEqual(check(cdm, { spec: '1.0' }), ['path-missing']);
    assert.deepEqual(check(resourceList([{ loc: 'http://e.com/a', md: { path: '/a', change: 'created' } }])), ['change-unexpected', 'path-unexpected']);
  });
  void it('applies Table 4 to entries: at/from allowed, recommended, forbidden', () => {
    const cli: ResourceSyncDocument = {
      root: 'sitemapindex',
      md: { capability: 'changelist', from: '2013-01-01T00:00:00Z' },
      ln: [UP],
      entries: [
        { loc: 'http://e.com/cl1.xml', md: { from: '2013-01-01T00:00:00Z', until: '2013-01-02T00:00:00Z' } },
        { loc: 'http://e.com/cl3.xml', md: { from: '2013-01-03T00:00:00Z' } },
        { loc: 'http://e.com/cl2.xml', md: { from: '2013-01-02T00:00:00Z', at: '2013-01-02T00:00:00Z' } },
        { loc: 'http://e.com/cl4.xml' },
      ],
    };
    assert.deepEqual(check(cli), ['at-forbidden', 'changes-out-of-order', 'entry-from-missing']);
    const rl = resourceList([{ loc: 'http://e.com/a', md: { at: '2013-01-01T00:00:00Z' } }]);
    assert.deepEqual(check(rl), ['at-forbidden']);
    const cl = changeList([{ loc: 'http://e.com/a', md: { change: 'created', from: '2013-01-01T00:00:00Z' } }]);
    assert.deepEqual(check(cl), ['from-forbidden']);
  });
  void it('reports each issue with line and path, and truncates floods of one code', () => {
    const entries: Entry[] = [];
    for (let i = 0; i < 250; i++) entries.push({ loc: `http://e.com/${i}`, md: { length: 'x' }, line: i + 10 });
    const issues = validateDocument(resourceList(entries), { maxIssuesPerCode: 100 });
    assert.equal(issues.length, 101);
    assert.equal(issues[0]!.code, 'issues-truncated', 'document-wide issues (no line) come first');
    assert.match(issues[0]!.message, /150 more 'length-invalid'/);
    assert.equal(issues[1]!.line, 10);
    assert.equal(issues[1]!.path, 'urlset/url[1]/rs:md/@length');
  });
  void it('validates notifications and archives', () => {
    const cn: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'change-notification', from: '2013-01-03T00:00:00Z' },
      ln: [],
      entries: [{ loc: 'http://e.com/a', md: { change: 'created', datetime: '2013-01-03T00:07:22Z' } }, { loc: 'http://e.com/b' }],
    };
    assert.deepEqual(check(cn), ['until-missing', 'change-missing']);
    const cla: ResourceSyncDocument = {
      root: 'urlset',
      md: { capability: 'changelist-archive' },
      ln: [UP],
      entries: [
        { loc: 'http://e.com/cl2.xml', md: { from: '2013-01-02T00:00:00Z' } },
        { loc: 'http://e.com/cl1.xml', md: { from: '2013-01-01T00:00:00Z' } },
      ],
    };
    const issues = validateDocument(cla);
    assert.deepEqual(codes(issues), ['archive-out-of-order']);
    assert.equal(issues[0]!.section, 'ResourceSync Archives §5');
  });
});

void describe('streaming', () => {
  void it('validate() reads an async iterable of entries and counts them', async () => {
    const header = { root: 'urlset' as const, md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' }, ln: [UP] };
    async function* entries(): AsyncGenerator<Entry> {
      await Promise.resolve();
      for (let i = 0; i < 1000; i++) yield { loc: `http://e.com/${i}`, md: i === 500 ? { length: 'big' } : { length: String(i) } };
    }
    const { issues, entries: n } = await validate({ header, entries: entries() }, { spec: '1.0' });
    assert.equal(n, 1000);
    assert.deepEqual(codes(issues), ['length-invalid']);
    assert.equal(issues[0]!.path, 'urlset/url[501]/rs:md/@length');
  });
  void it('turns parser notes into issues, skipping those the model already shows', () => {
    const doc: ResourceSyncDocument = {
      ...resourceList([{ loc: 'http://e.com/a', line: 7 }]),
      notes: [
        { code: 'md-repeated', line: 9, message: 'a second <rs:md> in one entry is ignored' },
        { code: 'unknown-attribute', line: 8, message: "attribute 'size' is not defined on <rs:md>" },
        { code: 'wrong-namespace', line: 2, message: 'root in another namespace' },
      ],
    };
    const issues = validateDocument(doc);
    assert.deepEqual(codes(issues), ['wrong-namespace', 'md-repeated']);
    assert.equal(issues[1]!.line, 9);
    assert.equal(issues[1]!.severity, 'error');
  });
  void it('createValidator exposes the kind and end() is idempotent', () => {
    const v = createValidator({ root: 'sitemapindex', md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' }, ln: [UP] });
    assert.equal(v.kind?.id, 'resource-list-index');
    v.entry({ loc: 'http://e.com/rl1.xml', md: { at: '2013-01-03T09:00:00Z' } });
    assert.deepEqual(v.end(), []);
    assert.deepEqual(v.end(), []);
  });
});

void describe('lenient mode: what real producers publish', () => {
  const LENIENT: ValidateOptions = { mode: 'lenient' };
  const errors = (issues: ValidationIssue[]): IssueCode[] => issues.filter((i) => i.severity === 'error').map((i) => i.code);
  const find = (issues: ValidationIssue[], code: IssueCode): ValidationIssue => {
    const issue = issues.find((i) => i.code === code);
    assert.ok(issue, `${code} in ${codes(issues).join(', ')}`);
    return issue;
  };

  void it('a Change List (Dump, Manifest, Index) without from: tolerated, md.from stays undefined, no interval check', () => {
    const entries: Entry[] = [{ loc: 'http://e.com/a', md: { change: 'created', datetime: '2013-01-02T12:00:00Z', path: '/a', type: 'text/plain' } }];
    for (const capability of ['changelist', 'changedump', 'changedump-manifest']) {
      const md = { capability, until: '2013-01-03T00:00:00Z' };
      assert.deepEqual(errors(validateDocument(changeList(entries, md))), ['from-missing'], capability);
      const lenient = validateDocument(changeList(entries, md), LENIENT);
      assert.deepEqual(errors(lenient), [], capability);
      // one report of the missing from: no 'until without from' beside it
      assert.ok(!codes(lenient).includes('until-without-from'), capability);
      assert.equal(find(lenient, 'tolerated-from-missing').path, 'urlset/rs:md/@from');
    }
    const index: ResourceSyncDocument = { root: 'sitemapindex', md: { capability: 'changelist' }, ln: [UP], entries: [{ loc: 'http://e.com/cl1.xml', md: { from: '2013-01-01T00:00:00Z' } }] };
    assert.deepEqual(codes(validateDocument(index, LENIENT)), ['tolerated-from-missing']);
    // a change notification still needs its from (its interval is what it notifies)
    const cn: ResourceSyncDocument = { root: 'urlset', md: { capability: 'changelist-notification', until: '2013-01-03T00:00:00Z' }, ln: [], entries };
    assert.ok(errors(validateDocument(cn, LENIENT)).includes('from-missing'));
  });

  void it('a Resource List, Dump or Manifest without at: tolerated', () => {
    for (const capability of ['resourcelist', 'resourcedump-manifest']) {
      const doc = resourceList([{ loc: 'http://e.com/a', md: { path: '/a', type: 'text/plain' } }], { capability });
      assert.ok(errors(validateDocument(doc)).includes('at-missing'), capability);
      const lenient = validateDocument(doc, LENIENT);
      assert.deepEqual(errors(lenient), [], capability);
      assert.ok(codes(lenient).includes('tolerated-at-missing'), capability);
    }
  });

  void it('a manifest path without the leading slash, or ./a/b: read relative to the package root; ../ stays an error', () => {
    const manifest = (path: string): ResourceSyncDocument =>
      resourceList([{ loc: 'http://e.com/a', md: { path, type: 'text/plain' } }], { capability: 'resourcedump-manifest', at: '2013-01-03T09:00:00Z' });
    for (const [path, name] of [['a/b.txt', 'a/b.txt'], ['./a/b.txt', 'a/b.txt']]) {
      assert.deepEqual(codes(validateDocument(manifest(path!))), ['path-not-absolute']);
      const [issue] = validateDocument(manifest(path!), LENIENT);
      assert.equal(issue!.code, 'tolerated-path-relative');
      assert.equal(issue!.message, `tolerated: path '${path}' does not start with a slash; read as '/${name}', relative to the package root`);
    }
    assert.deepEqual(codes(validateDocument(manifest('../a.txt'), LENIENT)), ['path-not-absolute']);
    assert.deepEqual(codes(validateDocument(manifest('./'), LENIENT)), ['path-not-absolute']);
  });

  void it('datetime, at and lastmod with a space for T: tolerated (with a missing zone, both are said); strictly not a W3C Datetime', () => {
    const doc = changeList(
      [
        { loc: 'http://e.com/a', lastmod: '2013-01-03 10:00:00Z', md: { change: 'created', datetime: '2013-01-03 10:00:00Z' } },
        { loc: 'http://e.com/b', md: { change: 'updated', datetime: '2013-01-03 11:00:00' } },
      ],
      { capability: 'changelist', from: '2013-01-03 00:00:00Z' },
    );
    const strict = validateDocument(doc);
    assert.deepEqual([...new Set(errors(strict))], ['datetime-invalid']);
    assert.equal(strict.filter((i) => i.code === 'datetime-invalid').length, 4);
    const lenient = validateDocument(doc, LENIENT);
    assert.deepEqual(errors(lenient), []);
    assert.deepEqual(
      lenient.map((i) => [i.code, i.path]),
      [
        ['tolerated-datetime-space', 'urlset/rs:md/@from'],
        ['tolerated-datetime-space', 'urlset/url[1]/lastmod'],
        ['tolerated-datetime-space', 'urlset/url[1]/rs:md/@datetime'],
        ['tolerated-datetime-space', 'urlset/url[2]/rs:md/@datetime'],
        ['tolerated-datetime-no-zone', 'urlset/url[2]/rs:md/@datetime'],
      ],
    );
    // read as T: a change before the list's from is still found outside its interval
    const early = changeList([{ loc: 'http://e.com/a', md: { change: 'created', datetime: '2013-01-02 10:00:00Z' } }]);
    assert.ok(codes(validateDocument(early, LENIENT)).includes('datetime-outside-interval'));
  });

  void it('a draft-era modified= (parser note): strictly an attribute ResourceSync does not define, leniently read as at/until', () => {
    const doc: ResourceSyncDocument = {
      ...resourceList([{ loc: 'http://e.com/a' }], { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' }),
      notes: [{ code: 'draft-modified', line: 4, message: "draft-era modified='2013-01-03T09:00:00Z' read as at", params: { value: '2013-01-03T09:00:00Z', attribute: 'at' } }],
    };
    const strict = validateDocument(doc);
    assert.deepEqual(codes(strict), ['attribute-not-namespaced']);
    assert.equal(strict[0]!.message, "attribute 'modified' is not defined by ResourceSync: additional attributes must use another XML namespace");
    assert.equal(strict[0]!.line, 4);
    const lenient = validateDocument(doc, LENIENT);
    assert.deepEqual(codes(lenient), ['tolerated-draft-modified']);
    assert.equal(lenient[0]!.message, "tolerated: the draft-era attribute modified='2013-01-03T09:00:00Z' read as at='2013-01-03T09:00:00Z'");
  });

  void it('a second rs:md (parser note, merged by the parser): strictly an error, leniently tolerated', () => {
    const doc: ResourceSyncDocument = {
      ...changeList([{ loc: 'http://e.com/a', line: 8, md: { length: '3', change: 'created', datetime: '2013-01-03T10:00:00Z' } }]),
      notes: [{ code: 'md-repeated', line: 8, message: 'a second <rs:md> in one entry; its attributes are merged into the first' }],
    };
    assert.deepEqual(codes(validateDocument(doc)), ['md-repeated']);
    const lenient = validateDocument(doc, LENIENT);
    assert.deepEqual(codes(lenient), ['tolerated-md-merged']);
    assert.equal(lenient[0]!.severity, 'warning');
    assert.equal(lenient[0]!.line, 8);
  });

  void it('a ResourceSync 1.0 deletion without lastmod: tolerated; other changes without lastmod stay errors', () => {
    const doc = changeList([
      { loc: 'http://e.com/a', lastmod: '2013-01-03T10:00:00Z', md: { change: 'updated' } },
      { loc: 'http://e.com/b', md: { change: 'deleted' } },
      { loc: 'http://e.com/c', md: { change: 'created' } },
    ]);
    assert.deepEqual(codes(validateDocument(doc, { spec: '1.0' })), ['lastmod-missing', 'lastmod-missing']);
    assert.deepEqual(
      validateDocument(doc, { spec: '1.0', mode: 'lenient' }).map((i) => [i.code, i.path]),
      [
        ['tolerated-lastmod-missing', 'urlset/url[2]/lastmod'],
        ['lastmod-missing', 'urlset/url[3]/lastmod'],
      ],
    );
  });

  void it('until before from: tolerated with until ignored, so later changes are not outside the interval', () => {
    const doc = changeList([{ loc: 'http://e.com/a', md: { change: 'updated', datetime: '2013-01-03T12:00:00Z' } }], {
      capability: 'changelist',
      from: '2013-01-03T00:00:00Z',
      until: '2013-01-02T00:00:00Z',
    });
    assert.deepEqual(codes(validateDocument(doc)).sort(), ['datetime-outside-interval', 'until-before-from']);
    assert.deepEqual(codes(validateDocument(doc, LENIENT)), ['tolerated-until-before-from']);
    // entries too (a Change List Index)
    const index: ResourceSyncDocument = {
      root: 'sitemapindex',
      md: { capability: 'changelist', from: '2013-01-01T00:00:00Z' },
      ln: [UP],
      entries: [{ loc: 'http://e.com/cl1.xml', md: { from: '2013-01-02T00:00:00Z', until: '2013-01-01T00:00:00Z' } }],
    };
    assert.deepEqual(codes(validateDocument(index)), ['until-before-from']);
    assert.deepEqual(codes(validateDocument(index, LENIENT)), ['tolerated-until-before-from']);
  });

  void it('a relative loc: an error strictly (a URL begins with its protocol), tolerated leniently', () => {
    const doc = resourceList([{ loc: 'res1.html' }, { loc: '/res2.html' }, { loc: 'http://e.com/res3.html' }]);
    const strict = validateDocument(doc);
    assert.deepEqual(codes(strict), ['loc-not-absolute', 'loc-not-absolute']);
    assert.ok(strict.every((i) => i.severity === 'error'));
    assert.deepEqual(codes(validateDocument(doc, LENIENT)), ['tolerated-loc-relative', 'tolerated-loc-relative']);
  });
});

void describe('docs/validation.md', () => {
  void it('lists every issue code with its severity and section', async () => {
    const { readFile } = await import('node:fs/promises');
    const { REPO_ROOT } = await import('../../../test/helpers/paths.js');
    const doc = await readFile(`${REPO_ROOT}docs/validation.md`, 'utf8');
    for (const code of ISSUE_CODES) {
      assert.ok(doc.includes(`| \`${code}\` | ${MESSAGES[code].severity} | ${MESSAGES[code].section} |`), code);
    }
  });
});
