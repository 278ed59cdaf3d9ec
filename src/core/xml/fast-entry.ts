import type { Entry, Ln, Md } from '../model/types.js';

/**
 * A fast path for the common shape of a `<url>`/`<sitemap>` entry (Z39.99 §7, Table 2):
 * `<loc>`, `<lastmod>`, `<changefreq>`, `<priority>` with plain text, and self-closing `rs:md` /
 * `rs:ln` whose attributes are the unprefixed ResourceSync ones with plain values.
 *
 * It either reads the whole entry from the buffer exactly as the general path would, or gives up
 * (returns undefined) without side effects, and the general, fully checking path reads it instead:
 * anything else (comments, CDATA, references, other elements or attributes, repeated elements, an
 * entry cut by the end of the buffer) makes it give up. It never accepts what the general path
 * would refuse.
 */
export interface FastEntryContext {
  /** `url` or `sitemap`: the entry element that matches the root. */
  element: string;
  /** `<rs:md` and `<rs:ln` with the prefix bound to the ResourceSync namespace on the root; '' if none. */
  mdOpen: string;
  lnOpen: string;
  /** `</url>` or `</sitemap>`. */
  close: string;
  maxValueLength: number;
  /** The buffer last searched for characters that need the general path, and where the next one is. */
  specialBuf?: string;
  nextSpecial?: number;
}

export interface FastEntry {
  entry: Entry;
  /** Offset just past the entry's end tag. */
  end: number;
}

/**
 * Characters that make an entry need the general path wherever they appear in it: references,
 * carriage returns and tabs (normalised), and ']' (as in ']]>'). Searched once per stretch of the
 * buffer, not once per value: `nextSpecial` caches where the next one is.
 */
const SPECIAL = /[&\r\t\]]/g;

/** Where the next such character is at or after `p` (cached per reader in `ctx`). */
function specialFrom(buf: string, p: number, ctx: FastEntryContext): number {
  if (buf !== ctx.specialBuf || ctx.nextSpecial === undefined || ctx.nextSpecial < p) {
    SPECIAL.lastIndex = p;
    const m = SPECIAL.exec(buf);
    ctx.nextSpecial = m === null ? buf.length : m.index;
    ctx.specialBuf = buf;
  }
  return ctx.nextSpecial;
}

/** End offset of the last text or attributes read (saves a result object per value). */
let readEnd = 0;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13;
}

/** Reads an entry starting at `p` (at its `<url>`), or returns undefined to leave it to the general path. */
export function scanEntry(buf: string, p: number, ctx: FastEntryContext, line: number): FastEntry | undefined {
  const el = ctx.element;
  let i = p + el.length + 2; // past '<url>'
  const entry: Entry = { loc: '', line };
  let haveLoc = false;
  let haveMd = false;
  const md = ctx.mdOpen;
  const ln = ctx.lnOpen;
  const len = buf.length;
  // The whole entry must be in the buffer and free of characters that need the general path.
  const close = buf.indexOf(ctx.close, i);
  if (close < 0 || specialFrom(buf, p, ctx) < close) return undefined;
  let nl = -1;
  for (;;) {
    while (i < len && isSpace(buf.charCodeAt(i))) i++;
    if (i >= len || buf.charCodeAt(i) !== 60 /* < */) return undefined;
    const c1 = buf.charCodeAt(i + 1);
    if (c1 === 47 /* / */) {
      // Only the entry's own end tag may close here.
      if (!buf.startsWith(el, i + 2) || buf.charCodeAt(i + 2 + el.length) !== 62) return undefined;
      if (!haveLoc) return undefined; // let the general path report what is missing
      return { entry, end: i + 3 + el.length };
    }
    if (c1 === 108 /* l */ && buf.startsWith('<loc>', i)) {
      if (haveLoc) return undefined;
      const v = text(buf, i + 5, '</loc>', ctx.maxValueLength);
      if (v === undefined) return undefined;
      entry.loc = v;
      haveLoc = true;
      i = readEnd;
      continue;
    }
    if (c1 === 108 && buf.startsWith('<lastmod>', i)) {
      if (entry.lastmod !== undefined) return undefined;
      const v = text(buf, i + 9, '</lastmod>', ctx.maxValueLength);
      if (v === undefined) return undefined;
      entry.lastmod = v;
      i = readEnd;
      continue;
    }
    if (c1 === 99 /* c */ && buf.startsWith('<changefreq>', i)) {
      if (entry.changefreq !== undefined) return undefined;
      const v = text(buf, i + 12, '</changefreq>', ctx.maxValueLength);
      if (v === undefined) return undefined;
      entry.changefreq = v;
      i = readEnd;
      continue;
    }
    if (c1 === 112 /* p */ && buf.startsWith('<priority>', i)) {
      if (entry.priority !== undefined) return undefined;
      const v = text(buf, i + 10, '</priority>', ctx.maxValueLength);
      if (v === undefined) return undefined;
      entry.priority = v;
      i = readEnd;
      continue;
    }
    if (md !== '' && buf.startsWith(md, i)) {
      if (haveMd) return undefined;
      const target: Md = {};
      if (nl < i) nl = buf.indexOf('\n', i);
      if (!attributes(buf, i + md.length, target, setMd, ctx.maxValueLength, nl)) return undefined;
      entry.md = target;
      haveMd = true;
      i = readEnd;
      continue;
    }
    if (ln !== '' && buf.startsWith(ln, i)) {
      const target: Ln = {};
      if (nl < i) nl = buf.indexOf('\n', i);
      if (!attributes(buf, i + ln.length, target, setLn, ctx.maxValueLength, nl)) return undefined;
      (entry.ln ??= []).push(target);
      i = readEnd;
      continue;
    }
    return undefined;
  }
}

/** Plain character data up to `close` (trimmed); undefined if it is not plain or not all in the buffer. */
function text(buf: string, start: number, close: string, max: number): string | undefined {
  const lt = buf.indexOf('<', start);
  if (lt < 0 || lt - start > max || !buf.startsWith(close, lt)) return undefined;
  readEnd = lt + close.length;
  if (lt === start) return '';
  // Trim only when needed: most values have no surrounding white space.
  return isSpace(buf.charCodeAt(start)) || isSpace(buf.charCodeAt(lt - 1)) ? buf.slice(start, lt).trim() : buf.slice(start, lt);
}

/**
 * Attributes of a self-closing element, from just after its name to past `/>` (left in
 * `readEnd`): false to give up. Only known, unprefixed, non-repeated attributes whose values hold
 * no '<' and no line break (`nl` is the next line break at or after the element's start).
 */
function attributes<T extends object>(
  buf: string,
  i: number,
  target: T,
  set: (t: T, name: string, value: string) => boolean,
  max: number,
  nl: number,
): boolean {
  const len = buf.length;
  let lt = -1;
  for (;;) {
    const before = i;
    while (i < len && isSpace(buf.charCodeAt(i))) i++;
    if (i + 1 >= len) return false;
    const c = buf.charCodeAt(i);
    if (c === 47 /* / */) {
      readEnd = i + 2;
      return buf.charCodeAt(i + 1) === 62;
    }
    if (i === before) return false; // white space must separate attributes
    const eq = buf.indexOf('=', i);
    if (eq < 0 || eq - i > 12) return false;
    const name = buf.slice(i, eq);
    const q = buf.charCodeAt(eq + 1);
    if (q !== 34 && q !== 39) return false;
    const close = buf.indexOf(q === 34 ? '"' : "'", eq + 2);
    if (close < 0 || close - eq - 2 > max) return false;
    if (lt < eq) lt = buf.indexOf('<', eq);
    if ((lt >= 0 && lt < close) || (nl > eq && nl < close)) return false;
    if (nl >= 0 && nl < eq) nl = buf.indexOf('\n', eq);
    if (nl > eq && nl < close) return false;
    if (!set(target, name, buf.slice(eq + 2, close))) return false;
    i = close + 1;
  }
}

function setMd(md: Md, name: string, v: string): boolean {
  switch (name) {
    case 'capability':
      if (md.capability !== undefined) return false;
      md.capability = v;
      return true;
    case 'at':
      if (md.at !== undefined) return false;
      md.at = v;
      return true;
    case 'completed':
      if (md.completed !== undefined) return false;
      md.completed = v;
      return true;
    case 'from':
      if (md.from !== undefined) return false;
      md.from = v;
      return true;
    case 'until':
      if (md.until !== undefined) return false;
      md.until = v;
      return true;
    case 'change':
      if (md.change !== undefined) return false;
      md.change = v;
      return true;
    case 'datetime':
      if (md.datetime !== undefined) return false;
      md.datetime = v;
      return true;
    case 'encoding':
      if (md.encoding !== undefined) return false;
      md.encoding = v;
      return true;
    case 'hash':
      if (md.hash !== undefined) return false;
      md.hash = v;
      return true;
    case 'length':
      if (md.length !== undefined) return false;
      md.length = v;
      return true;
    case 'path':
      if (md.path !== undefined) return false;
      md.path = v;
      return true;
    case 'type':
      if (md.type !== undefined) return false;
      md.type = v;
      return true;
    default:
      return false;
  }
}

function setLn(ln: Ln, name: string, v: string): boolean {
  switch (name) {
    case 'rel':
      if (ln.rel !== undefined) return false;
      ln.rel = v;
      return true;
    case 'href':
      if (ln.href !== undefined) return false;
      ln.href = v;
      return true;
    case 'hash':
      if (ln.hash !== undefined) return false;
      ln.hash = v;
      return true;
    case 'length':
      if (ln.length !== undefined) return false;
      ln.length = v;
      return true;
    case 'modified':
      if (ln.modified !== undefined) return false;
      ln.modified = v;
      return true;
    case 'path':
      if (ln.path !== undefined) return false;
      ln.path = v;
      return true;
    case 'pri':
      if (ln.pri !== undefined) return false;
      ln.pri = v;
      return true;
    case 'type':
      if (ln.type !== undefined) return false;
      ln.type = v;
      return true;
    case 'encoding':
      if (ln.encoding !== undefined) return false;
      ln.encoding = v;
      return true;
    default:
      return false;
  }
}
