/**
 * Attribute syntax the validator checks wherever an attribute appears (top level, entries, links): W3C
 * Datetimes (zoned, UTC at the top level), pairs of times in order, hashes, lengths, priorities of links, and
 * attributes outside the ResourceSync namespace.
 * @see Z39.99 §7 (attributes), W3C Datetime (NOTE-datetime)
 */
import { HASH_ALGORITHMS, PRI_MAX, PRI_MIN, RS_NS } from '../constants.js';
import type { DocumentKind } from '../model/document-kinds.js';
import { LN_ATTRIBUTES, MD_ATTRIBUTES, type ForeignAttribute, type Ln, type Md } from '../model/types.js';
import { hasSpaceSeparator, parseW3CDatetime, type W3CDatetime } from '../w3c-datetime.js';
import { IssueCollector } from './issue-collector.js';

/** The attributes `rs:md` and `rs:ln` define (Z39.99 §7, Appendix A); others are reported as unknown. */
const MD_KNOWN: ReadonlySet<string> = new Set<string>(MD_ATTRIBUTES);
const LN_KNOWN: ReadonlySet<string> = new Set<string>(LN_ATTRIBUTES);
const BASE64ISH = /^[A-Za-z0-9+/_-]+=*$/;

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
/** The rules of attribute syntax, over the issue collector. */
export abstract class AttributeRules extends IssueCollector {
  /** The kind's name, for messages. */
  protected abstract readonly name: string;
  /** The document's kind, when known. */
  abstract readonly kind: DocumentKind | undefined;

  /** Parses a date-time attribute once; reports syntax problems. */
  protected time(
    value: string | undefined,
    attribute: string,
    path: string,
    line: number | undefined,
    top = false,
  ): W3CDatetime | undefined {
    if (value === undefined) return undefined;
    const d = parseW3CDatetime(value, true);
    if (!d) {
      this.report('datetime-invalid', { attribute, value }, path, line);
      return undefined;
    }
    // A time after a space instead of 'T' (CORE's manifests): the parser's lenient reading.
    if (
      value.charCodeAt(10) !== 84 &&
      d.granularity !== 'year' &&
      d.granularity !== 'month' &&
      d.granularity !== 'day' &&
      hasSpaceSeparator(value)
    ) {
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
    } else if (
      top &&
      (d.granularity === 'year' ||
        d.granularity === 'month' ||
        d.granularity === 'day' ||
        !value.trimEnd().endsWith('Z'))
    ) {
      this.report('datetime-not-utc', { attribute, value }, path, line);
    }
    return d;
  }

  protected checkPairs(
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
      const code = this.lenient ? 'tolerated-completed-before-at' : 'completed-before-at';
      this.report(code, { value: md.completed, expected: md.at }, '/rs:md/@completed', line);
    }
    if (from && until && until.ms < from.ms) {
      const code = this.lenient ? 'tolerated-until-before-from' : 'until-before-from';
      this.report(code, { value: md.until, expected: md.from }, '/rs:md/@until', line);
    }
    if (md.completed !== undefined && md.at === undefined)
      this.report('completed-without-at', {}, '/rs:md/@completed', line);
    if (md.until !== undefined && md.from === undefined && !fromReported)
      this.report('until-without-from', {}, '/rs:md/@until', line);
  }

  protected checkForeign(
    extra: ForeignAttribute[],
    known: ReadonlySet<string>,
    path: string,
    line: number | undefined,
  ): void {
    for (const a of extra) {
      const qname = a.prefix ? `${a.prefix}:${a.local}` : a.local;
      if (a.ns === RS_NS) this.report('rs-attribute-prefixed', { value: qname }, `${path}/@${qname}`, line);
      else if (a.ns === '' && !known.has(a.local))
        this.report('attribute-not-namespaced', { value: qname }, `${path}/@${qname}`, line);
    }
  }

  /** Attribute syntax of an `rs:md` (top level or entry). */
  protected checkMdAttributes(md: Md, line: number | undefined, top: boolean): void {
    if (md.hash !== undefined) this.checkHash(md.hash, '/rs:md/@hash', line);
    if (md.length !== undefined && !isDigits(md.length))
      this.report('length-invalid', { value: md.length }, '/rs:md/@length', line);
    let extra = md.extra;
    // Lenient: a draft-era `modified` on a Capability List or Source Description, which have no time attribute
    // to read it as (the parser keeps it as written)
    const family = this.kind?.family;
    const draft = top && this.lenient && (family === 'capability' || family === 'description') ? extra?.find((a) => a.ns === '' && a.local === 'modified') : undefined;
    if (draft !== undefined) {
      this.report('tolerated-draft-modified-ignored', { value: draft.value, kind: this.name }, '/rs:md/@modified', line);
      extra = extra?.filter((a) => a !== draft);
    }
    if (extra !== undefined) this.checkForeign(extra, MD_KNOWN, '/rs:md', line);
    if (!top) return;
    if (md.change !== undefined) this.report('change-unexpected', { kind: this.name }, '/rs:md/@change', line);
    if (md.path !== undefined) this.report('path-unexpected', { kind: this.name }, '/rs:md/@path', line);
  }

  protected checkLn(ln: Ln, lnAt: number, line: number | undefined): void {
    this.lnAt = lnAt;
    if (ln.rel === undefined || ln.rel === '') this.report('ln-rel-missing', {}, '/@rel', line);
    if (ln.href === undefined || ln.href === '') this.report('ln-href-missing', {}, '/@href', line);
    if (ln.pri !== undefined) {
      const pri = ln.pri;
      const n = isDigits(pri) && pri.length <= 7 ? Number(pri) : NaN;
      if (!(n >= PRI_MIN && n <= PRI_MAX)) this.report('pri-out-of-range', { value: pri }, '/@pri', line);
    }
    if (ln.hash !== undefined) this.checkHash(ln.hash, '/@hash', line);
    if (ln.length !== undefined && !isDigits(ln.length))
      this.report('length-invalid', { value: ln.length }, '/@length', line);
    if (ln.modified !== undefined) this.time(ln.modified, 'modified', '/@modified', line);
    if (ln.extra !== undefined) this.checkForeign(ln.extra, LN_KNOWN, '', line);
    this.lnAt = 0;
  }

  /**
   * A whitespace-delimited list of `alg:hexdigest`; md5, sha-1 and sha-256 digests must be hex of
   * the right length; other algorithms are accepted as written. No allocation on the common path.
   * @see Z39.99 §7 (`hash`)
   */
  protected checkHash(value: string, path: string, line: number | undefined): void {
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
        this.report(
          'hash-digest-length',
          { value: value.slice(start, i), count: i - colon - 1, attribute: alg, expected },
          path,
          line,
        );
      }
    }
  }
}
