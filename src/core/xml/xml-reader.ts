/**
 * A strict, streaming, namespace-aware XML 1.0 reader for the XML that ResourceSync uses.
 *
 * It is written for speed on Sitemap-shaped documents (no DTD) and rejects every
 * well-formedness error it can meet: a DOCTYPE (no DTD processing, so no entity expansion and no
 * external entities, ever), undeclared entities, characters outside XML's Char production,
 * mismatched or unclosed tags, duplicate attributes, `<` in attribute values, `]]>` in text,
 * `--` in comments, undeclared namespace prefixes, text or a second element outside the root.
 * Its results do not depend on where the input is split into chunks.
 */
import { ResourceSyncError, type ErrorCode } from '../errors.js';
import type { Limits } from '../constants.js';
import { decodeReferences } from './references.js';
import { NamespaceScope, type ResolvedName } from './namespaces.js';
import type { XmlAttribute, XmlHandler } from './xml-handler.js';
import { ATTR_SPECIAL, NAME, NOT_CHAR, TEXT_SPECIAL } from './xml-chars.js';

export type { XmlAttribute, XmlHandler } from './xml-handler.js';

const NO_ATTRIBUTES: XmlAttribute[] = [];

const LT = 60; // <
const GT = 62; // >
const SLASH = 47;
const EQ = 61;
const QUOT = 34;
const APOS = 39;
const QMARK = 63;
const BANG = 33;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13;
}

function isBlank(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isSpace(s.charCodeAt(i))) return false;
  return true;
}

/** Thrown inside the reader when a token is cut by the end of the buffer; never escapes. */
class NeedMoreInput extends Error {}
const NEED_MORE = new NeedMoreInput('need more input');

/** The reader (see the module's header): `feed` it chunks of text, then `end()`; it calls its handler as it reads. */
export class XmlReader {
  private buf = '';
  private pos = 0;
  /** Absolute offset of buf[0] in the document (for byte-limit checks and errors). */
  private base = 0;
  private line = 1;
  private linePos = 0;
  /** Open elements, innermost last, and the namespace scope of each. */
  private readonly stack: ResolvedName[] = [];
  private readonly scopes: NamespaceScope[] = [];
  private seenRoot = false;
  private rootClosed = false;
  private seenDecl = false;
  private started = false;
  private finished = false;
  private readonly rootScope = NamespaceScope.empty();
  private readonly names: (string | undefined)[] = new Array<string | undefined>(256).fill(undefined);

  constructor(
    private readonly handler: XmlHandler,
    private readonly limits: Pick<Limits, 'maxDepth' | 'maxValueLength' | 'maxAttributes'>,
  ) {}

  /** Feeds the next piece of decoded text. */
  feed(chunk: string): void {
    if (this.finished) throw new Error('XmlReader: feed after end');
    this.advanceLines(this.pos);
    const bad = chunk.search(NOT_CHAR);
    if (bad >= 0) {
      const before = this.buf.slice(this.pos) + chunk.slice(0, bad);
      const line = this.line + before.split('\n').length - 1;
      const hex = chunk.charCodeAt(bad).toString(16).toUpperCase().padStart(4, '0');
      this.fail('RS_XML_MALFORMED', `U+${hex} is not an XML character`, line);
    }
    this.base += this.pos;
    this.buf = this.pos === this.buf.length ? chunk : this.buf.slice(this.pos) + chunk;
    this.pos = 0;
    this.linePos = 0;
    this.run(false);
  }

  /** Signals the end of input; throws if the document is incomplete. */
  end(): void {
    this.run(true);
    this.finished = true;
    if (this.stack.length > 0) {
      this.fail('RS_XML_TRUNCATED', `document ends inside <${this.stack[this.stack.length - 1]!.qname}>`);
    }
    if (!this.seenRoot) {
      this.fail(this.started ? 'RS_XML_MALFORMED' : 'RS_XML_EMPTY', this.started ? 'document has no root element' : 'document is empty');
    }
  }

  /** Current 1-based line (of the parse position). */
  currentLine(): number {
    return this.lineAt(this.pos);
  }

  /** The 1-based line of a buffer offset; offsets must be asked in increasing order (e.g. the `pos` of `XmlHandler.start` during that call). */
  lineAt(pos: number): number {
    this.advanceLines(pos);
    return this.line;
  }

  private advanceLines(to: number): void {
    const buf = this.buf;
    let p = this.linePos;
    if (to <= p) return;
    for (;;) {
      const nl = buf.indexOf('\n', p);
      if (nl < 0 || nl >= to) break;
      this.line++;
      p = nl + 1;
    }
    this.linePos = to;
  }

  private fail(code: ErrorCode, what: string, line?: number, column?: number): never {
    const l = line ?? this.currentLine();
    throw new ResourceSyncError(code, `Line ${l}: ${what}.`, { data: { line: l, ...(column === undefined ? {} : { column }) } });
  }

  private run(final: boolean): void {
    const buf = this.buf;
    const len = buf.length;
    for (;;) {
      const p = this.pos;
      if (p >= len) return;
      if (buf.charCodeAt(p) !== LT) {
        // Character data up to the next '<'.
        const lt = buf.indexOf('<', p);
        if (lt < 0) {
          if (!final) {
            if (len - p > this.limits.maxValueLength) this.fail('RS_LIMIT_VALUE', `text longer than ${this.limits.maxValueLength} characters`);
            return;
          }
          this.textRun(p, len);
          this.pos = len;
          return;
        }
        if (this.stack.length > 0 && !this.handler.wantsWhitespace && lt - p < 64 && isBlank(buf, p, lt)) {
          this.pos = lt;
          continue;
        }
        this.textRun(p, lt);
        this.pos = lt;
        continue;
      }
      if (this.stack.length === 1 && this.handler.fastChild !== undefined) {
        const end = this.handler.fastChild(buf, p);
        if (end > 0) {
          this.pos = end;
          continue;
        }
      }
      try {
        this.pos = this.markup(p);
      } catch (e) {
        if (e === NEED_MORE) {
          if (final) this.fail('RS_XML_TRUNCATED', 'document ends inside markup');
          if (len - p > this.limits.maxValueLength + 4096) this.fail('RS_LIMIT_VALUE', `markup longer than ${this.limits.maxValueLength} characters`);
          return;
        }
        throw e;
      }
    }
  }

  private textRun(from: number, to: number): void {
    const buf = this.buf;
    if (to - from > this.limits.maxValueLength) this.fail('RS_LIMIT_VALUE', `text longer than ${this.limits.maxValueLength} characters`);
    let raw = buf.slice(from, to);
    if (this.stack.length === 0) {
      // Outside the root only white space may appear.
      for (let i = 0; i < raw.length; i++) {
        if (!isSpace(raw.charCodeAt(i))) {
          this.advanceLines(from + i);
          this.fail('RS_XML_MALFORMED', this.seenRoot ? 'text after the root element' : 'text before the root element');
        }
      }
      return;
    }
    if (TEXT_SPECIAL.test(raw)) {
      if (raw.includes(']]>')) this.malformedAt(from + raw.indexOf(']]>'), "']]>' is not allowed in character data");
      if (raw.includes('\r')) raw = raw.replace(/\r\n?/g, '\n');
      if (raw.includes('&')) raw = this.refs(raw, from);
    }
    this.handler.text(raw);
  }

  private refs(raw: string, at: number): string {
    const out = decodeReferences(raw);
    if (typeof out === 'string') return out;
    this.advanceLines(at);
    return this.fail('RS_XML_MALFORMED', out.error);
  }

  /** Parses one markup construct starting at `p` ('<'); returns the position after it. */
  private markup(p: number): number {
    const buf = this.buf;
    const c1 = buf.charCodeAt(p + 1);
    if (Number.isNaN(c1)) throw NEED_MORE;
    if (c1 === SLASH) return this.endTag(p);
    if (c1 === QMARK) return this.pi(p);
    if (c1 === BANG) return this.bang(p);
    return this.startTag(p);
  }

  private bang(p: number): number {
    const buf = this.buf;
    if (buf.startsWith('<!--', p)) {
      const end = buf.indexOf('-->', p + 4);
      if (end < 0) throw NEED_MORE;
      const body = buf.slice(p + 4, end);
      if (body.includes('--') || body.endsWith('-')) this.malformedAt(p, "'--' is not allowed inside a comment");
      this.started = true;
      return end + 3;
    }
    if (buf.startsWith('<![CDATA[', p)) {
      if (this.stack.length === 0) this.malformedAt(p, 'CDATA section outside the root element');
      const end = buf.indexOf(']]>', p + 9);
      if (end < 0) {
        if (buf.length - p > this.limits.maxValueLength) this.fail('RS_LIMIT_VALUE', 'CDATA section too long');
        throw NEED_MORE;
      }
      let text = buf.slice(p + 9, end);
      if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
      this.handler.text(text);
      return end + 3;
    }
    if (buf.startsWith('<!DOCTYPE', p)) {
      this.advanceLines(p);
      this.fail(
        'RS_XML_DTD_FORBIDDEN',
        'a DOCTYPE is not allowed: ResourceSync documents have no DTD, and entity declarations are never processed',
      );
    }
    const rest = buf.slice(p, p + 9);
    if (rest.length < 9 && ['<!--', '<![CDATA[', '<!DOCTYPE'].some((m) => m.startsWith(rest))) throw NEED_MORE;
    return this.malformedAt(p, "'<!' does not start a comment or CDATA section");
  }

  private pi(p: number): number {
    const buf = this.buf;
    const end = buf.indexOf('?>', p + 2);
    if (end < 0) throw NEED_MORE;
    const nameEnd = this.nameEnd(p + 2);
    const target = buf.slice(p + 2, nameEnd);
    if (target === '') {
      this.advanceLines(p);
      this.fail('RS_XML_MALFORMED', 'processing instruction without a target');
    }
    if (nameEnd < end && !isSpace(buf.charCodeAt(nameEnd))) {
      this.advanceLines(p);
      this.fail('RS_XML_MALFORMED', `processing instruction target '${target}' is not a name`);
    }
    if (target.includes(':')) this.malformedAt(p, `processing instruction target '${target}' contains a colon`);
    if (target.toLowerCase() === 'xml') {
      if (target !== 'xml' || this.started || this.seenDecl || this.base + p !== 0) {
        this.advanceLines(p);
        this.fail('RS_XML_MALFORMED', 'the XML declaration is only allowed at the very start of the document');
      }
      this.xmlDecl(buf.slice(nameEnd, end), p);
      this.seenDecl = true;
    }
    this.started = true;
    return end + 2;
  }

  private xmlDecl(body: string, p: number): void {
    const m = /^\s+version\s*=\s*(["'])1\.[0-9]+\1(?:\s+encoding\s*=\s*(["'])[A-Za-z][A-Za-z0-9._-]*\2)?(?:\s+standalone\s*=\s*(["'])(?:yes|no)\3)?\s*$/.exec(body);
    if (!m) {
      this.advanceLines(p);
      this.fail('RS_XML_MALFORMED', 'malformed XML declaration');
    }
  }

  /** End of an XML Name starting at p (p itself if there is none). */
  private nameEnd(p: number): number {
    const buf = this.buf;
    NAME.lastIndex = p;
    const end = NAME.test(buf) ? NAME.lastIndex : p;
    // A name running into the end of the buffer may go on in the next chunk.
    if (end === buf.length) throw NEED_MORE;
    return end;
  }

  /**
   * The name at buf[from, to): the same string as last time when it repeats (as element and
   * attribute names do on every entry), so that no new string is allocated for it.
   */
  private intern(from: number, to: number): string {
    const buf = this.buf;
    const slot = ((buf.charCodeAt(from) << 3) ^ buf.charCodeAt(to - 1) ^ (to - from)) & 255;
    const known = this.names[slot];
    if (known !== undefined && known.length === to - from && buf.startsWith(known, from)) return known;
    const name = buf.slice(from, to);
    this.names[slot] = name;
    return name;
  }

  private skipSpace(p: number): number {
    const buf = this.buf;
    while (p < buf.length && isSpace(buf.charCodeAt(p))) p++;
    if (p === buf.length) throw NEED_MORE;
    return p;
  }

  private startTag(p: number): number {
    const buf = this.buf;
    if (this.rootClosed) this.malformedAt(p, 'a second root element');
    const nameEnd = this.nameEnd(p + 1);
    if (nameEnd === p + 1) this.malformedAt(p, "'<' not followed by a name");
    const qname = this.intern(p + 1, nameEnd);
    let i = nameEnd;
    let attrs = NO_ATTRIBUTES;
    let decls: [string, string][] | undefined;
    let prefixed = false;
    let selfClosing = false;
    for (;;) {
      const before = i;
      i = this.skipSpace(i);
      const c = buf.charCodeAt(i);
      if (c === GT) {
        i++;
        break;
      }
      if (c === SLASH) {
        if (i + 1 >= buf.length) throw NEED_MORE;
        if (buf.charCodeAt(i + 1) !== GT) this.malformedAt(i, "'/' not followed by '>' in a tag");
        selfClosing = true;
        i += 2;
        break;
      }
      if (i === before) this.malformedAt(i, `white space is required between attributes in <${qname}>`);
      const an = this.nameEnd(i);
      if (an === i) this.malformedAt(i, `unexpected character '${buf[i]}' in <${qname}>`);
      const aname = this.intern(i, an);
      i = this.skipSpace(an);
      if (buf.charCodeAt(i) !== EQ) this.malformedAt(i, `attribute '${aname}' has no value`);
      i = this.skipSpace(i + 1);
      const close = this.quotedValueEnd(i, aname);
      let value = buf.slice(i + 1, close);
      if (ATTR_SPECIAL.test(value)) value = this.attrValue(value, i);
      if (aname.charCodeAt(0) === 120 /* x */ && (aname === 'xmlns' || aname.startsWith('xmlns:'))) {
        decls = this.addDeclaration(decls, aname, value, qname, i);
      } else {
        attrs = this.addAttribute(attrs, aname, value, qname, i);
        if (aname.includes(':')) prefixed = true;
      }
      i = close + 1;
    }
    this.openElement(qname, attrs, decls, prefixed, p, selfClosing);
    return i;
  }

  /** Where the quoted value that starts at `i` ends (its closing quote), within the value length limit. */
  private quotedValueEnd(i: number, aname: string): number {
    const buf = this.buf;
    const q = buf.charCodeAt(i);
    if (q !== QUOT && q !== APOS) this.malformedAt(i, `value of attribute '${aname}' is not quoted`);
    // Native searches rather than a character loop: they are fast before the JIT warms up too.
    const close = buf.indexOf(q === QUOT ? '"' : "'", i + 1);
    if (close < 0 || close - i - 1 > this.limits.maxValueLength) {
      if (close >= 0 || buf.length - i > this.limits.maxValueLength) {
        this.fail('RS_LIMIT_VALUE', `attribute '${aname}' longer than ${this.limits.maxValueLength} characters`);
      }
      throw NEED_MORE;
    }
    return close;
  }

  /** A namespace declaration (`xmlns`, `xmlns:prefix`) of the tag, checked, added to `decls`. */
  private addDeclaration(decls: [string, string][] | undefined, aname: string, value: string, qname: string, i: number): [string, string][] {
    const prefix = aname === 'xmlns' ? '' : aname.slice(6);
    const problem = NamespaceScope.declarationProblem(prefix, value);
    if (problem) this.malformedAt(i, problem);
    if (decls?.some((d) => d[0] === prefix)) this.malformedAt(i, `duplicate attribute '${aname}' on <${qname}>`);
    (decls ??= []).push([prefix, value]);
    return decls;
  }

  /** An attribute of the tag, not repeated and within the limit, added to `attrs` (its namespace resolved later). */
  private addAttribute(attrs: XmlAttribute[], aname: string, value: string, qname: string, i: number): XmlAttribute[] {
    if (attrs === NO_ATTRIBUTES) attrs = [];
    for (let k = 0; k < attrs.length; k++) {
      if (attrs[k]!.qname === aname) this.malformedAt(i, `duplicate attribute '${aname}' on <${qname}>`);
    }
    if (attrs.length >= this.limits.maxAttributes) this.fail('RS_LIMIT_ATTRIBUTES', `more than ${this.limits.maxAttributes} attributes on <${qname}>`);
    attrs.push({ qname: aname, prefix: '', local: aname, ns: '', value });
    return attrs;
  }

  /** The whole tag is in the buffer: resolves its names, opens the element (and closes a self-closing one). */
  private openElement(qname: string, attrs: XmlAttribute[], decls: [string, string][] | undefined, prefixed: boolean, p: number, selfClosing: boolean): void {
    let scope = this.scopes.length > 0 ? this.scopes[this.scopes.length - 1]! : this.rootScope;
    if (decls) scope = scope.with(decls);
    if (prefixed) this.resolveAttributes(attrs, scope, p);
    const name = scope.name(qname);
    if (name === undefined) this.malformedAt(p, `'${qname}' is not a valid qualified name, or its prefix is not declared`);
    this.seenRoot = true;
    this.started = true;
    if (this.stack.length >= this.limits.maxDepth) this.fail('RS_LIMIT_DEPTH', `elements nested deeper than ${this.limits.maxDepth}`);
    this.stack.push(name);
    this.scopes.push(scope);
    this.handler.start(name, attrs, decls, p, selfClosing);
    if (selfClosing) {
      this.stack.pop();
      this.scopes.pop();
      if (this.stack.length === 0) this.rootClosed = true;
      this.handler.end(name);
    }
  }

  private malformedAt(i: number, what: string): never {
    this.advanceLines(i);
    return this.fail('RS_XML_MALFORMED', what);
  }

  private resolveAttributes(attrs: XmlAttribute[], scope: NamespaceScope, p: number): void {
    for (const a of attrs) {
      if (!a.qname.includes(':')) continue;
      const name = scope.name(a.qname);
      if (name === undefined || name.prefix === '') {
        this.malformedAt(p, `attribute '${a.qname}' is not a valid qualified name, or its prefix is not declared`);
      }
      a.prefix = name.prefix;
      a.local = name.local;
      a.ns = name.ns;
    }
    // Namespaces in XML §6.3: no two attributes with the same expanded name.
    for (let k = 1; k < attrs.length; k++) {
      for (let j = 0; j < k; j++) {
        if (attrs[k]!.ns !== '' && attrs[k]!.ns === attrs[j]!.ns && attrs[k]!.local === attrs[j]!.local) {
          this.malformedAt(p, `attributes '${attrs[j]!.qname}' and '${attrs[k]!.qname}' have the same expanded name`);
        }
      }
    }
  }

  private attrValue(raw: string, at: number): string {
    let v = raw;
    if (v.includes('<')) this.malformedAt(at, "'<' is not allowed in an attribute value");
    // Attribute-value normalisation (XML 1.0 §3.3.3): literal white space becomes a space.
    if (v.includes('\r') || v.includes('\n') || v.includes('\t')) v = v.replace(/\r\n|[\r\n\t]/g, ' ');
    if (v.includes('&')) v = this.refs(v, at);
    return v;
  }

  private endTag(p: number): number {
    const buf = this.buf;
    const top = this.stack[this.stack.length - 1];
    let nameEnd = p + 2 + (top ? top.qname.length : 0);
    if (nameEnd >= buf.length) throw NEED_MORE;
    const after = buf.charCodeAt(nameEnd);
    // Fast path: the expected name followed by '>' or space; else read the name to report it.
    if (!top || !(after === GT || isSpace(after)) || !buf.startsWith(top.qname, p + 2)) {
      nameEnd = this.nameEnd(p + 2);
      const qname = buf.slice(p + 2, nameEnd);
      if (!top) this.malformedAt(p, `end tag </${qname}> without a start tag`);
      this.malformedAt(p, `end tag </${qname}> does not match <${top.qname}>`);
    }
    const gt = after === GT ? nameEnd : this.skipSpace(nameEnd);
    if (buf.charCodeAt(gt) !== GT) this.malformedAt(gt, "malformed end tag: expected '>'");
    this.stack.pop();
    this.scopes.pop();
    if (this.stack.length === 0) this.rootClosed = true;
    this.handler.end(top);
    return gt + 1;
  }
}

