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
  maxValueLength: number;
}

export interface FastEntry {
  entry: Entry;
  /** Offset just past the entry's end tag. */
  end: number;
}

/** Characters that make a text or attribute value need the general path. */
const PLAIN_TEXT = /[&\r\]<]/;
const PLAIN_ATTRIBUTE = /[&\t\n\r<]/;

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
      const r = text(buf, i + 5, '</loc>', ctx.maxValueLength);
      if (r === undefined) return undefined;
      entry.loc = r.value;
      haveLoc = true;
      i = r.end;
      continue;
    }
    if (c1 === 108 && buf.startsWith('<lastmod>', i)) {
      if (entry.lastmod !== undefined) return undefined;
      const r = text(buf, i + 9, '</lastmod>', ctx.maxValueLength);
      if (r === undefined) return undefined;
      entry.lastmod = r.value;
      i = r.end;
      continue;
    }
    if (c1 === 99 /* c */ && buf.startsWith('<changefreq>', i)) {
      if (entry.changefreq !== undefined) return undefined;
      const r = text(buf, i + 12, '</changefreq>', ctx.maxValueLength);
      if (r === undefined) return undefined;
      entry.changefreq = r.value;
      i = r.end;
      continue;
    }
    if (c1 === 112 /* p */ && buf.startsWith('<priority>', i)) {
      if (entry.priority !== undefined) return undefined;
      const r = text(buf, i + 10, '</priority>', ctx.maxValueLength);
      if (r === undefined) return undefined;
      entry.priority = r.value;
      i = r.end;
      continue;
    }
    if (md !== '' && buf.startsWith(md, i)) {
      if (haveMd) return undefined;
      const target: Md = {};
      const end = attributes(buf, i + md.length, target, setMd, ctx.maxValueLength);
      if (end < 0) return undefined;
      entry.md = target;
      haveMd = true;
      i = end;
      continue;
    }
    if (ln !== '' && buf.startsWith(ln, i)) {
      const target: Ln = {};
      const end = attributes(buf, i + ln.length, target, setLn, ctx.maxValueLength);
      if (end < 0) return undefined;
      (entry.ln ??= []).push(target);
      i = end;
      continue;
    }
    return undefined;
  }
}

/** Plain character data up to `close`; undefined if it is not plain or not all in the buffer. */
function text(buf: string, start: number, close: string, max: number): { value: string; end: number } | undefined {
  const lt = buf.indexOf('<', start);
  if (lt < 0 || lt - start > max || !buf.startsWith(close, lt)) return undefined;
  const raw = buf.slice(start, lt);
  if (PLAIN_TEXT.test(raw)) return undefined;
  return { value: raw.trim(), end: lt + close.length };
}

/**
 * Attributes of a self-closing element, from just after its name to past `/>`: returns the end
 * offset, or -1 to give up. Only known, unprefixed, non-repeated attributes with plain values.
 */
function attributes<T extends object>(buf: string, i: number, target: T, set: (t: T, name: string, value: string) => boolean, max: number): number {
  const len = buf.length;
  for (;;) {
    const before = i;
    while (i < len && isSpace(buf.charCodeAt(i))) i++;
    if (i + 1 >= len) return -1;
    const c = buf.charCodeAt(i);
    if (c === 47 /* / */) return buf.charCodeAt(i + 1) === 62 ? i + 2 : -1;
    if (i === before) return -1; // white space must separate attributes
    const eq = buf.indexOf('=', i);
    if (eq < 0 || eq - i > 12) return -1;
    const name = buf.slice(i, eq);
    const q = buf.charCodeAt(eq + 1);
    if (q !== 34 && q !== 39) return -1;
    const close = buf.indexOf(q === 34 ? '"' : "'", eq + 2);
    if (close < 0 || close - eq - 2 > max) return -1;
    const value = buf.slice(eq + 2, close);
    if (PLAIN_ATTRIBUTE.test(value)) return -1;
    if (!set(target, name, value)) return -1;
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
