/**
 * The validator: rules of Z39.99 §7–13 and Appendix A (and of ResourceSync 1.1, the Archives and
 * the Notification specifications) applied to a document header and then to its entries one at a
 * time, so that a 50,000-entry list is checked in constant memory as it streams from the parser.
 * @see Z39.99 §7–13, Appendix A
 */
import { CHANGEFREQS, CAPABILITY_LIST_ENTRIES, HASH_ALGORITHMS, PRI_MAX, PRI_MIN, RS_NS } from '../constants.js';
import { documentKind, documentKindById, type DocumentKind, type EntryOrder, type EntryRules, type TimeAttribute } from '../model/document-kinds.js';
import type { DocumentHeader, Entry, ForeignAttribute, Ln, Md, ParseNote, ResourceSyncDocument } from '../model/types.js';
import { hasSpaceSeparator, parseW3CDatetime, type W3CDatetime } from '../w3c-datetime.js';
import { readManifestPath } from '../manifest-path.js';
import type { IssueCode, ValidateOptions, ValidationIssue } from './codes.js';
import { formatMessage, MESSAGES, type MessageParams } from './messages.js';
import { FingerprintSet } from '../fingerprint-set.js';
import { CHANGE_NOTIFICATION, FRAMEWORK_NOTIFICATION, frameworkChangeAllowed, LEGACY_CHANGE_NOTIFICATION } from '../model/notification.js';

/** Note codes the validator derives from the model itself (with a path), so notes would repeat them. */
const NOTES_COVERED: ReadonlySet<string> = new Set(['rs-attribute-prefixed', 'unknown-attribute']);
const NOTE_CODES: ReadonlySet<string> = new Set<IssueCode>([
  'wrong-namespace', 'child-element-mismatch', 'md-repeated', 'element-repeated', 'unexpected-element', 'unexpected-text',
  'unknown-element', 'header-after-entries',
]);

/** A streaming validator for one document: feed entries in document order, then call `end()`. */
export interface Validator {
  /** The kind identified from the header's root and capability (undefined if unknown). */
  readonly kind: DocumentKind | undefined;
  /** Checks one entry. Entries must come in document order. */
  entry(e: Entry): void;
  /**
   * Finishes the document (rules that need every entry) and returns all issues, ordered by line
   * (issues without a line first). `notes` are the parser's structural notes for the document.
   */
  end(notes?: readonly ParseNote[]): ValidationIssue[];
}

/** What the validator needs from the parser's reader (`readDocument` in src/core/xml/read-document.ts). */
export interface EntrySource {
  header: DocumentHeader;
  entries: AsyncIterable<Entry> | Iterable<Entry>;
  /** The same entries in arrays (the parser's `batches`); used instead of `entries` when present. */
  batches?: AsyncIterable<readonly Entry[]>;
  /** The parser's structural notes; read after the entries, as they grow while reading. */
  notes?: readonly ParseNote[];
}

const CHANGEFREQ_SET: ReadonlySet<string> = new Set(CHANGEFREQS);
const KNOWN_ENTRY_CAPABILITIES: ReadonlySet<string> = new Set<string>([
  ...CAPABILITY_LIST_ENTRIES,
  'capabilitylist',
  'description',
  // notification channels listed in a Capability List (Change Notification §4, Framework Notification §5)
  CHANGE_NOTIFICATION,
  FRAMEWORK_NOTIFICATION,
]);
/** Misnamed index capabilities seen in the wild → the capability the standard gives them. @see Z39.99 §6.1 */
const INDEX_NAMES: Readonly<Record<string, string>> = {
  changelistindex: 'changelist',
  resourcelistindex: 'resourcelist',
  resourcedumpindex: 'resourcedump',
  changedumpindex: 'changedump',
};
const MD_KNOWN: ReadonlySet<string> = new Set([
  'capability', 'at', 'completed', 'from', 'until', 'change', 'datetime', 'encoding', 'hash', 'length', 'path', 'type',
]);
const LN_KNOWN: ReadonlySet<string> = new Set(['rel', 'href', 'hash', 'length', 'modified', 'path', 'pri', 'type', 'encoding']);
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const BASE64ISH = /^[A-Za-z0-9+/_-]+=*$/;
const PRIORITY = /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/;
/** The code of a missing top-level time attribute, and what lenient reading reports instead. */
const MISSING: Readonly<Record<TimeAttribute, readonly [IssueCode, IssueCode]>> = {
  at: ['at-missing', 'tolerated-at-missing'],
  completed: ['completed-without-at', 'completed-without-at'],
  from: ['from-missing', 'tolerated-from-missing'],
  until: ['until-missing', 'until-missing'],
};

function kindName(kind: DocumentKind | undefined): string {
  return kind?.name ?? 'ResourceSync document';
}

function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
}

function isHexFrom(s: string, from: number): boolean {
  for (let k = from; k < s.length; k++) if (!isHexDigit(s.charCodeAt(k))) return false;
  return true;
}

/** The common case without a scan for tokens: one well-formed md5, sha-1 or sha-256 value. */
function isSingleKnownHash(v: string): boolean {
  switch (v.length) {
    case 36:
      return v.startsWith('md5:') && isHexFrom(v, 4);
    case 46:
      return v.startsWith('sha-1:') && isHexFrom(v, 6);
    case 72:
      return v.startsWith('sha-256:') && isHexFrom(v, 8);
    default:
      return false;
  }
}

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

/** End of the period a W3C Datetime names (a date `2013-01-03` runs until the end of that day). */
function periodEnd(d: W3CDatetime): number {
  const t = new Date(d.ms);
  switch (d.granularity) {
    case 'year':
      return Date.UTC(t.getUTCFullYear() + 1, 0, 1) - 1;
    case 'month':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + 1, 1) - 1;
    case 'day':
      return d.ms + 86_400_000 - 1;
    default:
      return d.ms;
  }
}

class StreamingValidator implements Validator {
  readonly kind: DocumentKind | undefined;
  private readonly issues: ValidationIssue[] = [];
  private readonly counts = new Map<IssueCode, number>();
  private readonly max: number;
  private readonly lenient: boolean;
  private readonly v11: boolean;
  private readonly root: string;
  private readonly child: string;
  private readonly name: string;
  private readonly section: string;
  /** The kind's entry rules (those of an unknown kind: nothing required, anything allowed). */
  private readonly rules: EntryRules | undefined;
  private readonly changeAllowed: boolean;
  private readonly lastmodRequired: boolean;
  private readonly pathAllowed: boolean;
  private readonly pathRule: EntryRules['path'];
  private readonly datetimeAllowed: boolean;
  private readonly order: EntryOrder | undefined;
  // interval of the document, for datetime (1.1) and lastmod (1.0) checks
  private readonly fromMs: number | undefined;
  private readonly untilMs: number | undefined;
  private readonly fromText: string;
  private readonly untilText: string;
  // state
  private index = 0;
  /** Entry being checked (1-based; 0 while checking the header). */
  private at = 0;
  /** Link being checked (1-based; 0 when not in a link). */
  private lnAt = 0;
  private lastOrderMs = -Infinity;
  private lastOrderText = '';
  private outOfOrder = 0;
  private capabilities: Set<string> | undefined;
  private locs: FingerprintSet | undefined;
  private ended = false;

  constructor(header: DocumentHeader, options: ValidateOptions) {
    this.max = options.maxIssuesPerCode ?? 100;
    this.lenient = options.mode === 'lenient';
    this.v11 = (options.spec ?? '1.1') === '1.1';
    this.root = header.root;
    this.child = header.root === 'urlset' ? 'url' : 'sitemap';
    const kind = this.headerKind(header);
    this.kind = kind;
    this.name = kindName(kind);
    this.section = kind ? kind.citation : 'Z39.99 §7';
    const rules = kind?.entry;
    this.rules = rules;
    this.changeAllowed = rules === undefined || rules.change === 'required';
    this.lastmodRequired = !this.v11 && rules?.lastmod === 'required-1.0';
    this.pathRule = rules?.path ?? 'forbidden';
    this.pathAllowed = rules === undefined || rules.path !== 'forbidden';
    this.datetimeAllowed = this.v11 && (rules === undefined || rules.datetime);
    this.order = kind?.order;
    if (rules?.uniqueLocs === true) this.locs = new FingerprintSet({ capacity: 50_000 });
    if (rules?.capability === 'advertised') this.capabilities = new Set();

    const md = header.md;
    const from = md?.from !== undefined ? parseW3CDatetime(md.from, true) : undefined;
    const until = md?.until !== undefined ? parseW3CDatetime(md.until, true) : undefined;
    this.fromMs = from?.ms;
    // Lenient: an `until` before `from` is ignored (see checkPairs), so the interval is open at its end.
    this.untilMs = until && !(this.lenient && from && until.ms < from.ms) ? periodEnd(until) : undefined;
    this.fromText = md?.from ?? '';
    this.untilText = md?.until ?? '';
    this.checkHeader(header, kind);
  }

  // ---- reporting -------------------------------------------------------------------------------

  /**
   * Records an issue. `tail` is the path below the current element: the root, or the current
   * entry (`this.at`), or the current link of either (`this.lnAt`); paths are only built here.
   */
  private report(code: IssueCode, params: MessageParams, tail: string, line: number | undefined, section?: string): void {
    const n = (this.counts.get(code) ?? 0) + 1;
    this.counts.set(code, n);
    if (n > this.max) return;
    const def = MESSAGES[code];
    let path = this.root;
    if (this.at > 0) path += `/${this.child}[${this.at}]`;
    if (this.lnAt > 0) path += `/rs:ln[${this.lnAt}]`;
    const issue: ValidationIssue = { code, severity: def.severity, message: formatMessage(code, params), section: section ?? def.section };
    if (line !== undefined) issue.line = line;
    issue.path = path + tail;
    this.issues.push(issue);
  }

  // ---- header ----------------------------------------------------------------------------------

  private headerKind(header: DocumentHeader): DocumentKind | undefined {
    const capability = header.md?.capability;
    if (capability === undefined) return undefined;
    const known = documentKind(header.root, capability);
    if (known) return known;
    const renamed = INDEX_NAMES[capability];
    if (renamed !== undefined && this.lenient) return documentKind(header.root, renamed);
    return undefined;
  }

  private checkHeader(header: DocumentHeader, kind: DocumentKind | undefined): void {
    const md = header.md;
    const mdPath = '/rs:md';
    const line = header.mdLine;
    if (!md) {
      this.report('md-missing', {}, mdPath, undefined);
    } else {
      const capability = md.capability;
      if (capability === undefined) {
        this.report('capability-missing', {}, '/rs:md/@capability', line);
      } else if (!kind) {
        const renamed = INDEX_NAMES[capability];
        if (renamed !== undefined) {
          this.report('capability-index-name', { value: capability, expected: renamed }, '/rs:md/@capability', line);
        } else if (documentKind(this.root === 'urlset' ? 'sitemapindex' : 'urlset', capability)) {
          this.report('capability-root-mismatch', { value: capability, root: this.root }, '/rs:md/@capability', line);
        } else {
          this.report('capability-unknown', { value: capability }, '/rs:md/@capability', line);
        }
      } else if (INDEX_NAMES[capability] !== undefined) {
        this.report('tolerated-capability-index-name', { value: capability, expected: kind.capability }, '/rs:md/@capability', line);
      }
      if (capability === LEGACY_CHANGE_NOTIFICATION) {
        const params = { value: capability, expected: CHANGE_NOTIFICATION };
        this.report(this.lenient ? 'tolerated-capability-legacy-name' : 'capability-legacy-name', params, '/rs:md/@capability', line);
      }
      if (kind?.id === 'capability-list-index') this.report('capabilitylist-index', {}, '', line);
      this.checkTopTimes(md, kind, mdPath, line);
      this.checkMdAttributes(md, line, true);
    }
    this.checkHeaderLinks(header, kind);
  }

  private checkTopTimes(md: Md, kind: DocumentKind | undefined, mdPath: string, line: number | undefined): void {
    const top = kind?.top;
    const params = { kind: this.name };
    // Lenient: resync-build writes Resource Dump Manifests without `at` and Change Lists without `from`;
    // a list without `from` is read as starting at its earliest entry.
    if (top !== undefined) {
      for (const a of top.required) {
        if (md[a] !== undefined) continue;
        const [strict, tolerated] = MISSING[a];
        const code = this.lenient && top.toleratedMissing.includes(a) ? tolerated : strict;
        this.report(code, params, `/rs:md/@${a}`, line, this.section);
      }
      for (const a of top.forbidden) {
        if (md[a] === undefined) continue;
        const code = a === 'at' || a === 'completed' ? 'at-forbidden' : 'from-forbidden';
        this.report(code, { ...params, attribute: a }, `/rs:md/@${a}`, line);
      }
    }
    const interval = top?.required.includes('from') === true;
    const at = this.time(md.at, 'at', '/rs:md/@at', line, true);
    const completed = this.time(md.completed, 'completed', '/rs:md/@completed', line, true);
    const from = this.time(md.from, 'from', '/rs:md/@from', line, true);
    const until = this.time(md.until, 'until', '/rs:md/@until', line, true);
    // (a list of changes without `from` is reported as such: 'until' without 'from' would say it twice)
    this.checkPairs(md, at, completed, from, until, mdPath, line, interval);
  }

  private checkPairs(
    md: Md,
    at: W3CDatetime | undefined,
    completed: W3CDatetime | undefined,
    from: W3CDatetime | undefined,
    until: W3CDatetime | undefined,
    mdPath: string,
    line: number | undefined,
    fromReported = false,
  ): void {
    if (at && completed && completed.ms < at.ms) {
      this.report('completed-before-at', { value: md.completed, expected: md.at }, '/rs:md/@completed', line);
    }
    if (from && until && until.ms < from.ms) {
      const code = this.lenient ? 'tolerated-until-before-from' : 'until-before-from';
      this.report(code, { value: md.until, expected: md.from }, '/rs:md/@until', line);
    }
    if (md.completed !== undefined && md.at === undefined) this.report('completed-without-at', {}, '/rs:md/@completed', line);
    if (md.until !== undefined && md.from === undefined && !fromReported) this.report('until-without-from', {}, '/rs:md/@until', line);
  }

  private checkHeaderLinks(header: DocumentHeader, kind: DocumentKind | undefined): void {
    let up = 0;
    let describedby = 0;
    const links = header.ln;
    for (let i = 0; i < links.length; i++) {
      const ln = links[i]!;
      if (ln.rel === 'up') up++;
      else if (ln.rel === 'describedby') describedby++;
      this.checkLn(ln, i + 1, header.mdLine);
    }
    if (!kind) return;
    const rules = kind.links;
    if (up === 0 && rules.up === 'required') {
      const expected = documentKindById(rules.upTo ?? 'capability-list').name;
      if (this.lenient) this.report('tolerated-up-link-missing', { kind: kind.name }, '', undefined, this.section);
      else this.report('up-link-missing', { kind: kind.name, expected }, '', undefined, this.section);
    }
    if (up > 1) this.report('up-link-repeated', { count: up }, '', undefined);
    if (up > 0 && rules.up === 'forbidden') this.report('up-link-unexpected', {}, '', undefined);
    if (describedby === 0 && rules.describedby !== undefined) {
      this.report('describedby-link-missing', { kind: kind.name, expected: rules.describedby }, '', undefined, this.section);
    }
  }

  // ---- shared attribute checks -----------------------------------------------------------------

  /** Parses a date-time attribute once; reports syntax problems. */
  private time(value: string | undefined, attribute: string, path: string, line: number | undefined, top = false): W3CDatetime | undefined {
    if (value === undefined) return undefined;
    const d = parseW3CDatetime(value, true);
    if (!d) {
      this.report('datetime-invalid', { attribute, value }, path, line);
      return undefined;
    }
    // A time after a space instead of 'T' (CORE's manifests): the parser's lenient reading.
    if (value.charCodeAt(10) !== 84 && d.granularity !== 'year' && d.granularity !== 'month' && d.granularity !== 'day' && hasSpaceSeparator(value)) {
      if (!this.lenient) {
        this.report('datetime-invalid', { attribute, value }, path, line);
        return undefined;
      }
      this.report('tolerated-datetime-space', { attribute, value }, path, line);
    }
    if (!d.zoned) {
      if (this.lenient) this.report('tolerated-datetime-no-zone', { attribute, value }, path, line);
      else {
        this.report('datetime-invalid', { attribute, value }, path, line);
        return undefined;
      }
    } else if (top && (d.granularity === 'year' || d.granularity === 'month' || d.granularity === 'day' || !value.trimEnd().endsWith('Z'))) {
      this.report('datetime-not-utc', { attribute, value }, path, line);
    }
    return d;
  }

  private checkForeign(extra: ForeignAttribute[], known: ReadonlySet<string>, path: string, line: number | undefined): void {
    for (const a of extra) {
      const qname = a.prefix ? `${a.prefix}:${a.local}` : a.local;
      if (a.ns === RS_NS) this.report('rs-attribute-prefixed', { value: qname }, `${path}/@${qname}`, line);
      else if (a.ns === '' && !known.has(a.local)) this.report('attribute-not-namespaced', { value: qname }, `${path}/@${qname}`, line);
    }
  }

  /** Attribute syntax of an `rs:md` (top level or entry). */
  private checkMdAttributes(md: Md, line: number | undefined, top: boolean): void {
    if (md.hash !== undefined) this.checkHash(md.hash, '/rs:md/@hash', line);
    if (md.length !== undefined && !isDigits(md.length)) this.report('length-invalid', { value: md.length }, '/rs:md/@length', line);
    if (md.extra !== undefined) this.checkForeign(md.extra, MD_KNOWN, '/rs:md', line);
    if (!top) return;
    if (md.change !== undefined) this.report('change-unexpected', { kind: this.name }, '/rs:md/@change', line);
    if (md.path !== undefined) this.report('path-unexpected', { kind: this.name }, '/rs:md/@path', line);
  }

  private checkLn(ln: Ln, lnAt: number, line: number | undefined): void {
    this.lnAt = lnAt;
    if (ln.rel === undefined || ln.rel === '') this.report('ln-rel-missing', {}, '/@rel', line);
    if (ln.href === undefined || ln.href === '') this.report('ln-href-missing', {}, '/@href', line);
    if (ln.pri !== undefined) {
      const pri = ln.pri;
      const n = isDigits(pri) && pri.length <= 7 ? Number(pri) : NaN;
      if (!(n >= PRI_MIN && n <= PRI_MAX)) this.report('pri-out-of-range', { value: pri }, '/@pri', line);
    }
    if (ln.hash !== undefined) this.checkHash(ln.hash, '/@hash', line);
    if (ln.length !== undefined && !isDigits(ln.length)) this.report('length-invalid', { value: ln.length }, '/@length', line);
    if (ln.modified !== undefined) this.time(ln.modified, 'modified', '/@modified', line);
    if (ln.extra !== undefined) this.checkForeign(ln.extra, LN_KNOWN, '', line);
    this.lnAt = 0;
  }

  /**
   * A whitespace-delimited list of `alg:hexdigest`; md5, sha-1 and sha-256 digests must be hex of
   * the right length; other algorithms are accepted as written. No allocation on the common path.
   * @see Z39.99 §7 (`hash`)
   */
  private checkHash(value: string, path: string, line: number | undefined): void {
    if (isSingleKnownHash(value)) return;
    const n = value.length;
    let i = 0;
    while (i < n) {
      while (i < n && isSpace(value.charCodeAt(i))) i++;
      if (i >= n) break;
      const start = i;
      while (i < n && !isSpace(value.charCodeAt(i))) i++;
      const colon = value.indexOf(':', start);
      if (colon <= start || colon >= i - 1) {
        this.report('hash-syntax', { value: value.slice(start, i) }, path, line);
        continue;
      }
      let expected: number | undefined;
      let alg: string;
      const algLen = colon - start;
      if (algLen === 3 && value.startsWith('md5', start)) alg = 'md5';
      else if (algLen === 5 && value.startsWith('sha-1', start)) alg = 'sha-1';
      else if (algLen === 7 && value.startsWith('sha-256', start)) alg = 'sha-256';
      else alg = value.slice(start, colon).toLowerCase();
      if (alg === 'md5' || alg === 'sha-1' || alg === 'sha-256') expected = HASH_ALGORITHMS[alg];
      else if (alg !== 'urn') continue; // other algorithms are accepted as written
      let hex = alg !== 'urn';
      for (let k = colon + 1; hex && k < i; k++) if (!isHexDigit(value.charCodeAt(k))) hex = false;
      if (!hex) {
        const token = value.slice(start, i);
        if (this.lenient && (alg === 'urn' || BASE64ISH.test(token.slice(algLen + 1)))) {
          this.report('tolerated-hash-encoding', { value: token }, path, line);
        } else {
          this.report('hash-not-hex', { value: token }, path, line);
        }
      } else if (i - colon - 1 !== expected) {
        this.report('hash-digest-length', { value: value.slice(start, i), count: i - colon - 1, attribute: alg, expected }, path, line);
      }
    }
  }

  // ---- entries ---------------------------------------------------------------------------------

  entry(e: Entry): void {
    const index = ++this.index;
    this.at = index;
    const line = e.line;
    const loc = e.loc;
    if (loc === undefined || loc.length === 0) {
      this.report('loc-missing', {}, '/loc', line);
    } else {
      // The Sitemaps protocol: a URL begins with its protocol. Lenient: resolved against the document's URL.
      if (!ABSOLUTE_URI.test(loc)) this.report(this.lenient ? 'tolerated-loc-relative' : 'loc-not-absolute', { value: loc }, '/loc', line);
      if (this.locs?.seen(loc) === true) this.report('loc-duplicate', { value: loc }, '/loc', line);
    }

    let lastmod: W3CDatetime | undefined;
    if (e.lastmod !== undefined) {
      lastmod = this.time(e.lastmod, 'lastmod', '/lastmod', line);
      if (this.rules?.lastmod === 'discouraged') this.report('lastmod-discouraged', { kind: this.name }, '/lastmod', line, this.section);
    } else if (this.lastmodRequired) {
      // Lenient: 1.0 producers leave <lastmod> off deletions (the time of a deletion is often unknown).
      const code = this.lenient && e.md?.change === 'deleted' ? 'tolerated-lastmod-missing' : 'lastmod-missing';
      this.report(code, { kind: this.name }, '/lastmod', line, this.section);
    }
    if (e.changefreq !== undefined && !CHANGEFREQ_SET.has(e.changefreq)) {
      this.report('changefreq-invalid', { value: e.changefreq }, '/changefreq', line);
    }
    if (e.priority !== undefined && !PRIORITY.test(e.priority)) {
      this.report('priority-invalid', { value: e.priority }, '/priority', line);
    }

    const md = e.md;
    let datetime: W3CDatetime | undefined;
    let from: W3CDatetime | undefined;
    if (md !== undefined) {
      const mdPath = '/rs:md';
      this.checkMdAttributes(md, line, false);
      if (md.type === undefined && this.rules?.typeRecommended === true && md.change !== 'deleted') {
        this.report('type-missing', { kind: this.name }, '/rs:md/@type', line, this.section);
      }
      if (this.rules?.packageMetadata === true && (md.type === undefined || md.length === undefined)) {
        this.report('package-metadata-missing', { kind: this.name }, mdPath, line, this.section);
      }
      datetime = this.entryTimes(md, mdPath, line);
      from = md.from !== undefined ? parseW3CDatetime(md.from, true) : undefined;
      this.entryChange(md, mdPath, line);
      this.entryPath(md, mdPath, line);
      if (this.rules?.capability !== undefined) this.entryCapability(md.capability, mdPath, line);
      if (this.rules?.capability === 'framework') this.entryFrameworkChange(md, line);
    } else {
      const mdPath = '/rs:md';
      if (this.rules?.change === 'required') this.report('change-missing', { kind: this.name }, mdPath, line, this.section);
      if (this.pathRule !== 'forbidden') this.report('path-missing', { kind: this.name, expected: '' }, mdPath, line, this.section);
      if (this.rules?.typeRecommended === true) this.report('type-missing', { kind: this.name }, mdPath, line, this.section);
      if (this.rules?.packageMetadata === true) this.report('package-metadata-missing', { kind: this.name }, mdPath, line, this.section);
      if (this.rules?.from === 'recommended') this.report('entry-from-missing', { kind: this.name }, mdPath, line, this.section);
      if (this.rules?.capability === 'advertised' || this.rules?.capability === 'framework') {
        this.report('entry-capability-missing', { kind: this.name }, mdPath, line, this.section);
      }
    }

    const ln = e.ln;
    if (ln !== undefined) {
      for (let i = 0; i < ln.length; i++) this.checkLn(ln[i]!, i + 1, line);
    }

    // Interval and order: 1.0 changes are timed by <lastmod>; 1.1 by the datetime attribute.
    if (this.order !== undefined) {
      let key: W3CDatetime | undefined;
      let keyName: string;
      let keyText: string | undefined;
      if (this.order === 'change') {
        if (this.v11 || this.rules?.lastmod !== 'required-1.0') {
          // 1.0 changes are timed by <lastmod>, notifications by datetime in both versions
          key = datetime;
          keyName = 'datetime';
          keyText = md?.datetime;
        } else {
          key = lastmod;
          keyName = 'lastmod';
          keyText = e.lastmod;
        }
      } else if (this.order === 'package') {
        key = from ?? lastmod;
        keyName = from ? 'from' : 'lastmod';
        keyText = from ? md?.from : e.lastmod;
      } else {
        key = from;
        keyName = 'from';
        keyText = md?.from;
      }
      if (key !== undefined) this.checkOrder(key.ms, keyName, keyText ?? '', '', line);
    }
    if (!this.v11 && lastmod !== undefined && this.lastmodRequired) {
      if ((this.fromMs !== undefined && lastmod.ms < this.fromMs) || (this.untilMs !== undefined && lastmod.ms > this.untilMs)) {
        this.report('lastmod-outside-interval', { value: e.lastmod, from: this.fromText, until: this.untilText }, '/lastmod', line, this.section);
      }
    }
  }

  private entryTimes(md: Md, mdPath: string, line: number | undefined): W3CDatetime | undefined {
    let datetime: W3CDatetime | undefined;
    if (md.datetime !== undefined) {
      datetime = this.time(md.datetime, 'datetime', '/rs:md/@datetime', line);
      if (!this.datetimeAllowed) {
        const expected = this.v11
          ? `is used in Change Lists, Change Dump Manifests and notifications, not in a ${this.name}`
          : 'is not defined in ResourceSync 1.0 (it was added in 1.1)';
        this.report('datetime-unexpected', { expected }, '/rs:md/@datetime', line);
      } else if (datetime !== undefined && this.v11 && this.fromMs !== undefined) {
        if (datetime.ms < this.fromMs || (this.untilMs !== undefined && datetime.ms > this.untilMs)) {
          this.report('datetime-outside-interval', { value: md.datetime, from: this.fromText, until: this.untilText }, '/rs:md/@datetime', line);
        }
      }
    }
    const hasAt = md.at !== undefined || md.completed !== undefined;
    const hasFrom = md.from !== undefined || md.until !== undefined;
    if (hasAt || hasFrom) {
      const at = this.time(md.at, 'at', '/rs:md/@at', line);
      const completed = this.time(md.completed, 'completed', '/rs:md/@completed', line);
      const from = this.time(md.from, 'from', '/rs:md/@from', line);
      const until = this.time(md.until, 'until', '/rs:md/@until', line);
      this.checkPairs(md, at, completed, from, until, mdPath, line);
      {
        const params = { kind: this.name };
        if (this.rules?.at === 'forbidden') {
          if (md.at !== undefined) this.report('at-forbidden', { ...params, attribute: 'at' }, '/rs:md/@at', line);
          if (md.completed !== undefined) this.report('at-forbidden', { ...params, attribute: 'completed' }, '/rs:md/@completed', line);
        }
        if (this.rules?.from === 'forbidden') {
          if (md.from !== undefined) this.report('from-forbidden', { ...params, attribute: 'from' }, '/rs:md/@from', line);
          if (md.until !== undefined) this.report('from-forbidden', { ...params, attribute: 'until' }, '/rs:md/@until', line);
        }
      }
    }
    if (this.rules?.from === 'recommended' && md.from === undefined) {
      this.report('entry-from-missing', { kind: this.name }, mdPath, line, this.section);
    }
    return datetime;
  }

  private entryChange(md: Md, mdPath: string, line: number | undefined): void {
    const change = md.change;
    if (change === undefined) {
      if (this.rules?.change === 'required') this.report('change-missing', { kind: this.name }, '/rs:md/@change', line, this.section);
      return;
    }
    if (change !== 'created' && change !== 'updated' && change !== 'deleted') {
      this.report('change-invalid', { value: change }, '/rs:md/@change', line);
    }
    if (!this.changeAllowed) this.report('change-unexpected', { kind: this.name }, '/rs:md/@change', line);
  }

  private entryPath(md: Md, mdPath: string, line: number | undefined): void {
    const path = md.path;
    if (path === undefined) {
      if (this.pathRule === 'all' || (this.pathRule === 'not-deleted' && md.change !== 'deleted')) {
        const expected = this.pathRule === 'not-deleted' ? ' (except for change="deleted")' : '';
        this.report('path-missing', { kind: this.name, expected }, '/rs:md/@path', line, this.section);
      }
      return;
    }
    if (!this.pathAllowed) this.report('path-unexpected', { kind: this.name }, '/rs:md/@path', line);
    else if (path.charCodeAt(0) !== 47) {
      // Lenient: `a/b` and `./a/b` (resync-build, CORE) are read relative to the package root.
      const read = this.lenient ? readManifestPath(path) : undefined;
      if (read !== undefined) this.report('tolerated-path-relative', { value: path, expected: read.name }, '/rs:md/@path', line, this.section);
      else this.report('path-not-absolute', { value: path }, '/rs:md/@path', line, this.section);
    }
  }

  private entryCapability(capability: string | undefined, mdPath: string, line: number | undefined): void {
    const path = '/rs:md/@capability';
    if (capability === undefined) {
      this.report('entry-capability-missing', { kind: this.name }, path, line, this.section);
      return;
    }
    if (this.rules?.capability === 'capabilitylist') {
      if (capability !== 'capabilitylist') {
        this.report('entry-capability-invalid', { value: capability, kind: this.name, expected: 'capabilitylist' }, path, line, this.section);
      }
      return;
    }
    const renamed = INDEX_NAMES[capability];
    if (renamed !== undefined) {
      if (this.lenient) this.report('tolerated-capability-index-name', { value: capability, expected: renamed }, path, line);
      else this.report('capability-index-name', { value: capability, expected: renamed }, path, line);
    } else if (!KNOWN_ENTRY_CAPABILITIES.has(capability)) {
      this.report('entry-capability-unknown', { value: capability }, path, line);
    }
    const set = this.capabilities;
    if (set !== undefined) {
      const normal = renamed ?? capability;
      if (set.has(normal)) {
        this.report(this.lenient ? 'tolerated-capability-duplicate' : 'capability-duplicate', { value: capability }, path, line, this.section);
      }
      else set.add(normal);
    }
  }

  /** @see Framework Notification §2.1, Table 2 */
  private entryFrameworkChange(md: Md, line: number | undefined): void {
    const { capability, change } = md;
    if (capability === undefined || change === undefined) return;
    if (!frameworkChangeAllowed(INDEX_NAMES[capability] ?? capability, change)) {
      this.report('framework-change-not-allowed', { value: change, expected: capability }, '/rs:md/@change', line, 'ResourceSync Framework Notification §2.1, Table 2');
    }
  }

    private checkOrder(ms: number, keyName: string, keyText: string, path: string, line: number | undefined): void {
    if (ms < this.lastOrderMs) {
      if (this.lenient) {
        this.outOfOrder++;
      } else {
        const code: IssueCode =
          this.order === 'package' ? 'packages-out-of-order' : this.order === 'archive' ? 'archive-out-of-order' : 'changes-out-of-order';
        const params = { kind: this.name, attribute: keyName, value: keyText, previous: this.lastOrderText };
        this.report(code, params, path, line, code === 'packages-out-of-order' ? undefined : this.section);
      }
    }
    this.lastOrderMs = ms;
    this.lastOrderText = keyText;
  }

  // ---- end -------------------------------------------------------------------------------------

  end(notes?: readonly ParseNote[]): ValidationIssue[] {
    if (this.ended) return this.issues;
    this.ended = true;
    this.at = 0;
    if (notes) {
      for (const note of notes) {
        if (NOTES_COVERED.has(note.code)) continue;
        let code: IssueCode;
        let params: MessageParams | undefined = note.params;
        if (note.code === 'md-repeated') code = this.lenient ? 'tolerated-md-merged' : 'md-repeated';
        else if (note.code === 'draft-modified') {
          // Strict: what it is without the draft, an attribute ResourceSync does not define.
          code = this.lenient ? 'tolerated-draft-modified' : 'attribute-not-namespaced';
          if (!this.lenient) params = { value: 'modified' };
        } else code = NOTE_CODES.has(note.code) ? (note.code as IssueCode) : 'unknown-element';
        const n = (this.counts.get(code) ?? 0) + 1;
        this.counts.set(code, n);
        if (n > this.max) continue;
        const def = MESSAGES[code];
        this.issues.push({ code, severity: def.severity, message: formatMessage(code, params), section: def.section, line: note.line });
      }
    }
    if (this.outOfOrder > 0) {
      this.report('tolerated-out-of-order', { kind: this.name, count: this.outOfOrder }, '', undefined, this.section);
    }
    for (const [code, n] of this.counts) {
      if (n > this.max) this.issues.push({
        code: 'issues-truncated',
        severity: 'warning',
        message: formatMessage('issues-truncated', { count: n - this.max, value: code }),
        section: MESSAGES[code].section,
      });
    }
    // Stable: by line, issues without a line (document-wide) first.
    this.issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    return this.issues;
  }
}

/**
 * A streaming validator for the document whose header is given: call `entry()` for each entry in
 * document order, then `end()` for the issues. Memory stays constant per entry, except for the set
 * of capabilities of a Capability List and a fingerprint of each of the (first 50,000) locs of a
 * Resource List or Resource Dump Manifest, used to report repeated entries.
 * @example
 * const v = createValidator(reader.header, { spec: '1.0' });
 * for await (const e of reader.entries) v.entry(e);
 * const issues = v.end();
 */
export function createValidator(header: DocumentHeader, options: ValidateOptions = {}): Validator {
  return new StreamingValidator(header, options);
}

/**
 * Validates a whole document held in memory.
 * @example validateDocument(doc, { spec: '1.0' }).filter((i) => i.severity === 'error')
 */
export function validateDocument(doc: ResourceSyncDocument, options: ValidateOptions = {}): ValidationIssue[] {
  const v = createValidator(doc, options);
  for (const e of doc.entries) v.entry(e);
  return v.end(doc.notes);
}

/**
 * Validates a document as it streams from the parser (`readDocument`), one entry at a time.
 * Parser errors (malformed XML, limits) propagate as the parser's ResourceSyncError.
 * @example const { issues, entries } = await validate(await readDocument(openInput(file)), { spec: '1.1' });
 */
export async function validate(reader: EntrySource, options: ValidateOptions = {}): Promise<{ issues: ValidationIssue[]; entries: number }> {
  const v = createValidator(reader.header, options);
  let entries = 0;
  if (reader.batches !== undefined) {
    for await (const batch of reader.batches) {
      for (const e of batch) v.entry(e);
      entries += batch.length;
    }
  } else {
    for await (const e of reader.entries) {
      v.entry(e);
      entries++;
    }
  }
  return { issues: v.end(reader.notes), entries };
}
