/**
 * The XML of an XMPP stream: stanzas read with the project's own streaming reader (no DTD, no entity
 * expansion, bounded names, values, depth and stanza size), as small element trees; an element written
 * back as a standalone document; and the writing of outgoing stanzas.
 * @see RFC 6120 §4 (XML streams), §11 (XML usage: no DTD, no entity declarations)
 */
import { ResourceSyncError } from '../core/errors.js';
import { LIMITS } from '../core/constants.js';
import { escapeAttribute, escapeText } from '../core/xml/escape.js';
import type { ResolvedName } from '../core/xml/namespaces.js';
import { XmlReader, type XmlAttribute, type XmlHandler } from '../core/xml/xml-reader.js';

/** An element received on a stream. */
export interface XmppElement {
  name: ResolvedName;
  /** Attributes other than namespace declarations. */
  attrs: XmlAttribute[];
  /** Namespace declarations written on it, as `[prefix, uri]` (`''`: the default namespace). */
  decls: [string, string][];
  children: (XmppElement | string)[];
}

/** An unprefixed attribute's value. */
export function attr(el: XmppElement, local: string): string | undefined {
  return el.attrs.find((a) => a.ns === '' && a.local === local)?.value;
}

/** The child elements, optionally only those of a local name (and namespace). */
export function elements(el: XmppElement, local?: string, ns?: string): XmppElement[] {
  return el.children.filter(
    (c): c is XmppElement => typeof c !== 'string' && (local === undefined || c.name.local === local) && (ns === undefined || c.name.ns === ns),
  );
}

/** The first child element of a local name (and namespace). */
export function element(el: XmppElement, local: string, ns?: string): XmppElement | undefined {
  return elements(el, local, ns)[0];
}

/** The text directly inside an element. */
export function textOf(el: XmppElement): string {
  return el.children.filter((c): c is string => typeof c === 'string').join('');
}

/**
 * An element as a standalone XML document (UTF-8, with an XML declaration): namespace declarations as
 * received, plus those of its ancestors that it uses.
 */
export function elementDocument(el: XmppElement): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${writeElement(el, new Map([['xml', 'http://www.w3.org/XML/1998/namespace']]))}`;
}

function writeElement(el: XmppElement, scope: ReadonlyMap<string, string>): string {
  const inScope = new Map(scope);
  let decls = '';
  const declare = (prefix: string, uri: string): void => {
    if (inScope.get(prefix) === uri || (prefix === '' && uri === '' && !inScope.has(''))) return;
    inScope.set(prefix, uri);
    decls += prefix === '' ? ` xmlns="${escapeAttribute(uri)}"` : ` xmlns:${prefix}="${escapeAttribute(uri)}"`;
  };
  for (const [prefix, uri] of el.decls) declare(prefix, uri);
  declare(el.name.prefix, el.name.ns);
  let attrs = '';
  for (const a of el.attrs) {
    if (a.prefix !== '') declare(a.prefix, a.ns);
    attrs += ` ${a.qname}="${escapeAttribute(a.value)}"`;
  }
  const open = `<${el.name.qname}${decls}${attrs}`;
  if (el.children.length === 0) return `${open}/>`;
  let body = '';
  for (const c of el.children) body += typeof c === 'string' ? escapeText(c) : writeElement(c, inScope);
  return `${open}>${body}</${el.name.qname}>`;
}

/** An element to send: `xml('iq', { type: 'get' }, xml('ping', { xmlns: 'urn:xmpp:ping' }))`. Children are escaped text or `raw()`. */
export function xml(name: string, attrs: Record<string, string | undefined>, ...children: (Raw | string | undefined)[]): Raw {
  let out = `<${name}`;
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out += ` ${k}="${escapeAttribute(v, k)}"`;
  const body = children.map((c) => (c === undefined ? '' : typeof c === 'string' ? escapeText(c) : c.xml)).join('');
  return { xml: body === '' ? `${out}/>` : `${out}>${body}</${name}>` };
}

/** Markup that is sent as it is. */
export interface Raw {
  readonly xml: string;
}

/** Marks well-formed markup to be embedded as it is. */
export function raw(markup: string): Raw {
  return { xml: markup };
}

/** What the reader reports. */
export interface StanzaHandler {
  /** A complete top-level element (a stanza, or a stream-level element such as `<stream:features>`). */
  stanza(el: XmppElement): void;
  /** A top-level element larger than the limit was read and dropped. */
  oversized(name: ResolvedName, size: number): void;
  /** The peer closed the stream (`</stream:stream>`). */
  close(): void;
}

/**
 * Reads one XML stream (a new one after each stream restart) from bytes, in any chunks. Each top-level element
 * is built as a tree and handed on; one whose size (its markup and text, counted as written without
 * white space between elements) passes `maxStanzaBytes` is read on but not kept, and reported. A single text node
 * or attribute value may be as long as the stanza limit (at least `LIMITS.maxValueLength`): the reader holds it
 * whole, so one longer than that ends the stream rather than being read on.
 * @throws ResourceSyncError RS_XML_* (a stream that is not well-formed XML, a DOCTYPE), RS_LIMIT_* (a name, value or
 * nesting past the limits), RS_XML_ENCODING (not UTF-8)
 */
export class StanzaReader implements XmlHandler {
  readonly wantsWhitespace = false;
  readonly #reader: XmlReader;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  readonly #handler: StanzaHandler;
  readonly #max: number;
  /** Open elements below the stream's root, innermost last. */
  #stack: XmppElement[] = [];
  #size = 0;
  #oversized = false;
  #depth = 0;

  constructor(handler: StanzaHandler, maxStanzaBytes: number) {
    this.#handler = handler;
    this.#max = maxStanzaBytes;
    this.#reader = new XmlReader(this, {
      maxDepth: LIMITS.maxDepth,
      // a long text node is counted into its stanza's size (kept, or dropped and reported), not refused as a value
      maxValueLength: Math.max(maxStanzaBytes, LIMITS.maxValueLength),
      maxAttributes: LIMITS.maxAttributes,
    });
  }

  /** Reads the next bytes. */
  write(bytes: Uint8Array): void {
    let text: string;
    try {
      text = this.#decoder.decode(bytes, { stream: true });
    } catch (cause) {
      throw new ResourceSyncError('RS_XML_ENCODING', 'The XMPP stream is not UTF-8.', { cause });
    }
    if (text !== '') this.#reader.feed(text);
  }

  start(name: ResolvedName, attrs: XmlAttribute[], decls: [string, string][] | undefined, _pos: number, _selfClosing: boolean): void {
    this.#depth++;
    if (this.#depth === 1) return; // the stream header
    if (this.#depth === 2) {
      this.#size = 0;
      this.#oversized = false;
    }
    this.#size += 2 * name.qname.length + 5;
    for (const a of attrs) this.#size += a.qname.length + a.value.length + 4;
    for (const [p, u] of decls ?? []) this.#size += p.length + u.length + 9;
    this.#count();
    const el: XmppElement = { name, attrs, decls: decls ?? [], children: [] };
    if (!this.#oversized) this.#stack[this.#stack.length - 1]?.children.push(el);
    this.#stack.push(el);
  }

  end(name: ResolvedName): void {
    this.#depth--;
    if (this.#depth === 0) {
      this.#handler.close();
      return;
    }
    const el = this.#stack.pop()!;
    if (this.#depth > 1) return;
    if (this.#oversized) this.#handler.oversized(name, this.#size);
    else this.#handler.stanza(el);
    this.#stack = [];
  }

  text(value: string): void {
    if (this.#depth < 2) return; // white space between stanzas (keepalives)
    this.#size += value.length;
    this.#count();
    if (!this.#oversized) this.#stack[this.#stack.length - 1]!.children.push(value);
  }

  #count(): void {
    if (this.#size > this.#max && !this.#oversized) {
      this.#oversized = true;
      for (const el of this.#stack) el.children = []; // what was kept of it goes
    }
  }
}
