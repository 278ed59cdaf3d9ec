import { RS_NS, SITEMAP_NS } from '../constants.js';
import { ResourceSyncError } from '../errors.js';
import { MD_ATTRIBUTES } from '../model/types.js';
import type {
  DocumentHeader,
  Entry,
  ForeignAttribute,
  ForeignElement,
  Ln,
  Md,
  ParseNote,
  ParseNoteCode,
} from '../model/types.js';
import { ForeignCapture } from './foreign-capture.js';
import { scanEntry, type FastEntryContext } from './fast-entry.js';
import type { XmlAttribute, XmlHandler } from './xml-reader.js';
import type { ResolvedName } from './namespaces.js';

const ENTRY_FIELDS = new Set<string>(['loc', 'lastmod', 'changefreq', 'priority']);

/**
 * The draft-era `modified` of a document (ResourceSync 0.5–0.6, 2013: `<rs:md capability="resourcelist"
 * modified="…"/>`), by capability: the time the list describes, which 1.0 calls `at` for a snapshot and
 * `until` (the end of the interval) for a list of changes. Its 0.9 revision replaced it so.
 * @see Z39.99 Appendix A
 */
const DRAFT_MODIFIED_AS: Readonly<Record<string, 'at' | 'until'>> = {
  resourcelist: 'at',
  resourcedump: 'at',
  'resourcedump-manifest': 'at',
  changelist: 'until',
  changedump: 'until',
  'changedump-manifest': 'until',
};

type Field = 'loc' | 'lastmod' | 'changefreq' | 'priority';

/**
 * Turns XML events into the ResourceSync model: the header (root, top-level `rs:md` and `rs:ln`s)
 * and then entries, queued for the streaming reader to hand out. Structure that does not match
 * Z39.99 §7 becomes a note, not an exception, so that the validator can report all of it.
 * @see Z39.99 §7, Table 2
 */
export class DocumentBuilder implements XmlHandler {
  header: DocumentHeader | undefined;
  /** True once the first entry started or the root ended: the header is complete. */
  headerReady = false;
  /** Entries parsed and not yet taken. */
  readonly queue: Entry[] = [];
  readonly notes: ParseNote[] = [];
  entryCount = 0;

  private depth = 0;
  private entry: Entry | undefined;
  private field: Field | undefined;
  private fieldText = '';
  private skipDepth = 0;
  private capture: ForeignCapture | undefined;
  private captureTarget: ForeignElement[] | undefined;
  private entryMdSeen = false;
  /** Set when the root allows the fast path for entries (default namespace = Sitemaps). */
  private fast: (FastEntryContext & { open: string }) | undefined;

  /** Set by the reader's owner: the line of an element's start tag (see XmlReader.lineAt). */
  lineAt: (pos: number) => number = () => 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxValueLength: number,
  ) {}

  get wantsWhitespace(): boolean {
    return this.capture !== undefined;
  }

  private note(code: ParseNoteCode, line: number, message: string, params?: Record<string, string>): void {
    if (this.notes.length < 1000) this.notes.push(params === undefined ? { code, line, message } : { code, line, message, params });
  }

  start(
    el: ResolvedName,
    attrs: XmlAttribute[],
    decls: [string, string][] | undefined,
    pos: number,
    selfClosing: boolean,
  ): void {
    const depth = this.depth++;
    if (this.capture) {
      this.capture.start(el, attrs);
      return;
    }
    if (this.skipDepth > 0) {
      this.skipDepth++;
      return;
    }
    if (depth === 0) return this.root(el, attrs, decls, pos);
    if (depth === 1) return this.topLevel(el, attrs, pos, selfClosing);
    if (depth === 2 && this.entry) return this.entryChild(el, attrs, pos);
    // Inside <loc> and friends.
    this.note('unexpected-element', this.lineAt(pos), `<${el.qname}> inside <${this.field ?? 'entry'}> is ignored`);
    this.skipDepth = 1;
  }

  private root(el: ResolvedName, attrs: XmlAttribute[], decls: [string, string][] | undefined, pos: number): void {
    const local = el.local;
    if (local !== 'urlset' && local !== 'sitemapindex') {
      throw new ResourceSyncError(
        'RS_NOT_RESOURCESYNC',
        `Line ${this.lineAt(pos)}: root element <${el.qname}> is not <urlset> or <sitemapindex>, so this is not a ResourceSync document.`,
        {
          data: { line: this.lineAt(pos), root: el.qname },
        },
      );
    }
    if (el.ns !== SITEMAP_NS) {
      this.note(
        'wrong-namespace',
        this.lineAt(pos),
        `root <${el.qname}> is in namespace '${el.ns}', not the Sitemap namespace '${SITEMAP_NS}'`,
      );
    }
    const header: DocumentHeader = { root: local, ln: [] };
    if (decls) {
      for (const [prefix, uri] of decls) {
        if (uri === SITEMAP_NS || uri === RS_NS) continue;
        (header.namespaces ??= {})[prefix] = uri;
      }
    }
    if (attrs.length > 0) header.attributes = attrs.map(foreign);
    this.header = header;
    if (el.ns === SITEMAP_NS && el.prefix === '') {
      const element = header.root === 'urlset' ? 'url' : 'sitemap';
      const rs = decls?.find(([prefix, uri]) => uri === RS_NS && prefix !== '')?.[0];
      this.fast = {
        element,
        mdOpen: rs === undefined ? '' : `<${rs}:md`,
        lnOpen: rs === undefined ? '' : `<${rs}:ln`,
        maxValueLength: this.maxValueLength,
        open: `<${element}>`,
        close: `</${element}>`,
        specialBuf: '',
        nextSpecial: -1,
      };
    }
  }

  private topLevel(el: ResolvedName, attrs: XmlAttribute[], pos: number, selfClosing: boolean): void {
    const header = this.header!;
    const ns = el.ns;
    if (ns === RS_NS && (el.local === 'md' || el.local === 'ln')) {
      if (this.headerReady && this.entryCount + (this.entry ? 1 : 0) > 0) {
        this.note('header-after-entries', this.lineAt(pos), `top-level <${el.qname}> after the first entry`);
      }
      if (el.local === 'md') {
        if (header.md) {
          this.note('md-repeated', this.lineAt(pos), 'a second top-level <rs:md>; its attributes are merged into the first');
          mergeMd(header.md, this.md(el, attrs, pos));
        } else {
          header.md = this.md(el, attrs, pos);
          header.mdLine = this.lineAt(pos);
        }
        this.draftModified(header.md, this.lineAt(pos));
      } else {
        header.ln.push(this.ln(el, attrs, pos));
      }
      if (!selfClosing) this.skipDepth = 1; // rs:md / rs:ln are empty; ignore any content
      return;
    }
    if (ns === SITEMAP_NS && (el.local === 'url' || el.local === 'sitemap')) {
      const expected = header.root === 'urlset' ? 'url' : 'sitemap';
      if (el.local !== expected) {
        this.note(
          'child-element-mismatch',
          this.lineAt(pos),
          `<${el.qname}> in <${header.root}>: expected <${expected}>`,
        );
      }
      this.headerReady = true;
      this.entry = { loc: '', line: this.lineAt(pos) };
      this.entryMdSeen = false;
      return;
    }
    if (ns === SITEMAP_NS || ns === RS_NS) {
      this.note(
        'unknown-element',
        this.lineAt(pos),
        `<${el.qname}> has no place at the top level; kept as an extension`,
      );
    }
    this.startCapture(el, attrs, (header.extensions ??= []));
  }

  private entryChild(el: ResolvedName, attrs: XmlAttribute[], pos: number): void {
    const entry = this.entry!;
    const ns = el.ns;
    if (ns === SITEMAP_NS && ENTRY_FIELDS.has(el.local)) {
      const f = el.local as Field;
      if (f === 'loc' ? entry.loc !== '' : entry[f] !== undefined) {
        this.note('element-repeated', this.lineAt(pos), `a second <${el.qname}> in one entry; the last one is kept`);
      }
      this.field = f;
      this.fieldText = '';
      return;
    }
    if (ns === RS_NS && el.local === 'md') {
      if (this.entryMdSeen && entry.md !== undefined) {
        this.note('md-repeated', this.lineAt(pos), 'a second <rs:md> in one entry; its attributes are merged into the first');
        mergeMd(entry.md, this.md(el, attrs, pos));
      } else {
        entry.md = this.md(el, attrs, pos);
      }
      this.entryMdSeen = true;
      this.skipDepth = 1;
      return;
    }
    if (ns === RS_NS && el.local === 'ln') {
      (entry.ln ??= []).push(this.ln(el, attrs, pos));
      this.skipDepth = 1;
      return;
    }
    if (ns === SITEMAP_NS || ns === RS_NS) {
      this.note('unknown-element', this.lineAt(pos), `<${el.qname}> has no place in an entry; kept as an extension`);
    }
    this.startCapture(el, attrs, (entry.extensions ??= []));
  }

  private startCapture(el: ResolvedName, attrs: XmlAttribute[], target: ForeignElement[]): void {
    this.capture = new ForeignCapture(el, attrs);
    this.captureTarget = target;
  }

  /** Anything but a ResourceSync attribute: kept in `extra`, noted when it looks like a mistake. */
  private extra(target: Md | Ln, el: ResolvedName, a: XmlAttribute, pos: number): void {
    if (a.ns === RS_NS) {
      this.note('rs-attribute-prefixed', this.lineAt(pos), `attribute '${a.qname}' must not have a namespace prefix`);
    } else if (a.ns === '') {
      this.note('unknown-attribute', this.lineAt(pos), `attribute '${a.local}' is not defined on <${el.qname}>`);
    }
    (target.extra ??= []).push(foreign(a));
  }

  /** `rs:md`: the attributes of Z39.99 §7 Table 3, plus 1.1's `datetime`. */
  private md(el: ResolvedName, attrs: XmlAttribute[], pos: number): Md {
    const md: Md = {};
    for (const a of attrs) {
      const v = a.value;
      if (a.ns !== '') {
        this.extra(md, el, a, pos);
        continue;
      }
      switch (a.local) {
        case 'capability':
          md.capability = v;
          break;
        case 'at':
          md.at = v;
          break;
        case 'completed':
          md.completed = v;
          break;
        case 'from':
          md.from = v;
          break;
        case 'until':
          md.until = v;
          break;
        case 'change':
          md.change = v;
          break;
        case 'datetime':
          md.datetime = v;
          break;
        case 'encoding':
          md.encoding = v;
          break;
        case 'hash':
          md.hash = v;
          break;
        case 'length':
          md.length = v;
          break;
        case 'path':
          md.path = v;
          break;
        case 'type':
          md.type = v;
          break;
        default:
          this.extra(md, el, a, pos);
      }
    }
    return md;
  }

  /**
   * A draft-era `modified` on the top-level `rs:md` is read as the attribute that replaced it (see
   * `DRAFT_MODIFIED_AS`) when that one is absent, and noted; otherwise it stays in `extra`.
   */
  private draftModified(md: Md, line: number): void {
    const extra = md.extra;
    if (extra === undefined || md.capability === undefined) return;
    const i = extra.findIndex((a) => a.ns === '' && a.local === 'modified');
    if (i < 0) return;
    const as = DRAFT_MODIFIED_AS[md.capability];
    if (as === undefined || md[as] !== undefined) return;
    const value = extra[i]!.value;
    md[as] = value;
    extra.splice(i, 1);
    if (extra.length === 0) delete md.extra;
    this.note('draft-modified', line, `draft-era modified='${value}' read as ${as}`, { value, attribute: as });
  }

  /** `rs:ln`: the attributes of Z39.99 §7 Table 3. */
  private ln(el: ResolvedName, attrs: XmlAttribute[], pos: number): Ln {
    const ln: Ln = {};
    for (const a of attrs) {
      const v = a.value;
      if (a.ns !== '') {
        this.extra(ln, el, a, pos);
        continue;
      }
      switch (a.local) {
        case 'rel':
          ln.rel = v;
          break;
        case 'href':
          ln.href = v;
          break;
        case 'hash':
          ln.hash = v;
          break;
        case 'length':
          ln.length = v;
          break;
        case 'modified':
          ln.modified = v;
          break;
        case 'path':
          ln.path = v;
          break;
        case 'pri':
          ln.pri = v;
          break;
        case 'type':
          ln.type = v;
          break;
        case 'encoding':
          ln.encoding = v;
          break;
        default:
          this.extra(ln, el, a, pos);
      }
    }
    return ln;
  }

  text(value: string): void {
    if (this.capture) return this.capture.text(value);
    if (this.skipDepth > 0) return;
    if (this.field) {
      this.fieldText += value;
      return;
    }
    if (/\S/.test(value)) {
      this.note(
        'unexpected-text',
        this.entry?.line ?? 0,
        `text '${value.trim().slice(0, 40)}' where only elements belong`,
      );
    }
  }

  /** The fast path for a whole entry (see fast-entry.ts); -1 leaves it to the events. */
  fastChild(buf: string, pos: number): number {
    const fast = this.fast;
    if (fast === undefined || this.capture !== undefined || this.skipDepth > 0 || !buf.startsWith(fast.open, pos)) return -1;
    const r = scanEntry(buf, pos, fast, this.lineAt(pos));
    if (r === undefined) return -1;
    this.headerReady = true;
    this.accept(r.entry);
    return r.end;
  }

  private accept(entry: Entry): void {
    if (++this.entryCount > this.maxEntries) {
      throw new ResourceSyncError(
        'RS_LIMIT_ENTRIES',
        `Line ${entry.line ?? 0}: more than ${this.maxEntries} entries (the Sitemaps limit adopted by Z39.99 §7; raise limits.maxEntries to read more).`,
        { data: { line: entry.line, limit: this.maxEntries } },
      );
    }
    this.queue.push(entry);
  }

  end(el: ResolvedName): void {
    const depth = --this.depth;
    if (this.capture) {
      if (this.capture.end(el)) {
        this.captureTarget!.push(this.capture.result());
        this.capture = undefined;
        this.captureTarget = undefined;
      }
      return;
    }
    if (this.skipDepth > 0) {
      this.skipDepth--;
      return;
    }
    if (depth === 2 && this.field) {
      const v = this.fieldText.trim();
      this.entry![this.field] = v;
      this.field = undefined;
      return;
    }
    if (depth === 1 && this.entry) {
      const entry = this.entry;
      this.entry = undefined;
      this.accept(entry);
      return;
    }
    if (depth === 0) this.headerReady = true;
  }
}

/**
 * Merges a repeated `rs:md` into the first: attributes the first lacks are taken from the second (a
 * producer that writes the change type in a second `<rs:md change="…"/>`); the first wins on conflicts.
 */
function mergeMd(into: Md, more: Md): void {
  for (const key of MD_ATTRIBUTES) {
    const v = more[key];
    if (v !== undefined && into[key] === undefined) into[key] = v;
  }
  if (more.extra !== undefined) (into.extra ??= []).push(...more.extra);
}

function foreign(a: { ns: string; prefix: string; local: string; value: string }): ForeignAttribute {
  return { ns: a.ns, prefix: a.prefix, local: a.local, value: a.value };
}
