import { RS_NS, SITEMAP_NS } from '../constants.js';
import { ResourceSyncError } from '../errors.js';
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
import type { XmlElement, XmlHandler } from './xml-reader.js';

const MD_KEYS = new Set<string>(['capability', 'at', 'completed', 'from', 'until', 'change', 'datetime', 'encoding', 'hash', 'length', 'path', 'type']);
const LN_KEYS = new Set<string>(['rel', 'href', 'hash', 'length', 'modified', 'path', 'pri', 'type', 'encoding']);
const ENTRY_FIELDS = new Set<string>(['loc', 'lastmod', 'changefreq', 'priority']);

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

  /** Set by the reader's owner: the line of an element's start tag (see XmlReader.lineAt). */
  lineAt: (pos: number) => number = () => 0;

  constructor(private readonly maxEntries: number) {}

  get wantsWhitespace(): boolean {
    return this.capture !== undefined;
  }

  private note(code: ParseNoteCode, line: number, message: string): void {
    if (this.notes.length < 1000) this.notes.push({ code, line, message });
  }

  start(el: XmlElement, selfClosing: boolean): void {
    const depth = this.depth++;
    if (this.capture) {
      this.capture.start(el);
      return;
    }
    if (this.skipDepth > 0) {
      this.skipDepth++;
      return;
    }
    if (depth === 0) return this.root(el);
    if (depth === 1) return this.topLevel(el, selfClosing);
    if (depth === 2 && this.entry) return this.entryChild(el);
    // Inside <loc> and friends.
    this.note('unexpected-element', this.lineAt(el.pos), `<${el.qname}> inside <${this.field ?? 'entry'}> is ignored`);
    this.skipDepth = 1;
  }

  private root(el: XmlElement): void {
    const local = el.local;
    if (local !== 'urlset' && local !== 'sitemapindex') {
      throw new ResourceSyncError('RS_NOT_RESOURCESYNC', `Line ${this.lineAt(el.pos)}: root element <${el.qname}> is not <urlset> or <sitemapindex>, so this is not a ResourceSync document.`, {
        data: { line: this.lineAt(el.pos), root: el.qname },
      });
    }
    if (el.ns !== SITEMAP_NS) {
      this.note('wrong-namespace', this.lineAt(el.pos), `root <${el.qname}> is in namespace '${el.ns}', not the Sitemap namespace '${SITEMAP_NS}'`);
    }
    const header: DocumentHeader = { root: local, ln: [] };
    if (el.decls) {
      for (const [prefix, uri] of el.decls) {
        if (uri === SITEMAP_NS || uri === RS_NS) continue;
        (header.namespaces ??= {})[prefix] = uri;
      }
    }
    if (el.attrs.length > 0) header.attributes = el.attrs.map(foreign);
    this.header = header;
  }

  private topLevel(el: XmlElement, selfClosing: boolean): void {
    const header = this.header!;
    const ns = el.ns;
    if (ns === RS_NS && (el.local === 'md' || el.local === 'ln')) {
      if (this.headerReady && this.entryCount + (this.entry ? 1 : 0) > 0) {
        this.note('header-after-entries', this.lineAt(el.pos), `top-level <${el.qname}> after the first entry`);
      }
      if (el.local === 'md') {
        if (header.md) this.note('md-repeated', this.lineAt(el.pos), 'a second top-level <rs:md> is ignored');
        else {
          header.md = this.md(el);
          header.mdLine = this.lineAt(el.pos);
        }
      } else {
        header.ln.push(this.ln(el));
      }
      if (!selfClosing) this.skipDepth = 1; // rs:md / rs:ln are empty; ignore any content
      return;
    }
    if (ns === SITEMAP_NS && (el.local === 'url' || el.local === 'sitemap')) {
      const expected = header.root === 'urlset' ? 'url' : 'sitemap';
      if (el.local !== expected) {
        this.note('child-element-mismatch', this.lineAt(el.pos), `<${el.qname}> in <${header.root}>: expected <${expected}>`);
      }
      this.headerReady = true;
      this.entry = { loc: '', line: this.lineAt(el.pos) };
      this.entryMdSeen = false;
      return;
    }
    if (ns === SITEMAP_NS || ns === RS_NS) {
      this.note('unknown-element', this.lineAt(el.pos), `<${el.qname}> has no place at the top level; kept as an extension`);
    }
    this.startCapture(el, (header.extensions ??= []));
  }

  private entryChild(el: XmlElement): void {
    const entry = this.entry!;
    const ns = el.ns;
    if (ns === SITEMAP_NS && ENTRY_FIELDS.has(el.local)) {
      const f = el.local as Field;
      if (f === 'loc' ? entry.loc !== '' : entry[f] !== undefined) {
        this.note('element-repeated', this.lineAt(el.pos), `a second <${el.qname}> in one entry; the last one is kept`);
      }
      this.field = f;
      this.fieldText = '';
      return;
    }
    if (ns === RS_NS && el.local === 'md') {
      if (this.entryMdSeen) this.note('md-repeated', this.lineAt(el.pos), 'a second <rs:md> in one entry is ignored');
      else entry.md = this.md(el);
      this.entryMdSeen = true;
      this.skipDepth = 1;
      return;
    }
    if (ns === RS_NS && el.local === 'ln') {
      (entry.ln ??= []).push(this.ln(el));
      this.skipDepth = 1;
      return;
    }
    if (ns === SITEMAP_NS || ns === RS_NS) {
      this.note('unknown-element', this.lineAt(el.pos), `<${el.qname}> has no place in an entry; kept as an extension`);
    }
    this.startCapture(el, (entry.extensions ??= []));
  }

  private startCapture(el: XmlElement, target: ForeignElement[]): void {
    this.capture = new ForeignCapture(el);
    this.captureTarget = target;
  }

  private attributes<T extends Md | Ln>(el: XmlElement, keys: Set<string>, target: T): T {
    const t = target as Record<string, unknown>;
    for (const a of el.attrs) {
      if (a.ns === '' && keys.has(a.local)) {
        t[a.local] = a.value;
        continue;
      }
      if (a.ns === RS_NS) {
        this.note('rs-attribute-prefixed', this.lineAt(el.pos), `attribute '${a.qname}' must not have a namespace prefix`);
      } else if (a.ns === '') {
        this.note('unknown-attribute', this.lineAt(el.pos), `attribute '${a.local}' is not defined on <${el.qname}>`);
      }
      ((t.extra as ForeignAttribute[] | undefined) ?? (t.extra = [] as ForeignAttribute[])).push(foreign(a));
    }
    return target;
  }

  private md(el: XmlElement): Md {
    return this.attributes(el, MD_KEYS, {});
  }

  private ln(el: XmlElement): Ln {
    return this.attributes(el, LN_KEYS, {});
  }

  text(value: string): void {
    if (this.capture) return this.capture.text(value);
    if (this.skipDepth > 0) return;
    if (this.field) {
      this.fieldText += value;
      return;
    }
    if (/\S/.test(value)) {
      this.note('unexpected-text', this.entry?.line ?? 0, `text '${value.trim().slice(0, 40)}' where only elements belong`);
    }
  }

  end(el: XmlElement): void {
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
      if (++this.entryCount > this.maxEntries) {
        throw new ResourceSyncError('RS_LIMIT_ENTRIES', `Line ${entry.line ?? 0}: more than ${this.maxEntries} entries (the Sitemaps limit adopted by Z39.99 §7; raise limits.maxEntries to read more).`, {
          data: { line: entry.line, limit: this.maxEntries },
        });
      }
      this.queue.push(entry);
      return;
    }
    if (depth === 0) this.headerReady = true;
  }
}

function foreign(a: { ns: string; prefix: string; local: string; value: string }): ForeignAttribute {
  return { ns: a.ns, prefix: a.prefix, local: a.local, value: a.value };
}
