/**
 * Reads one OAI-PMH 2.0 response, streamed through the project's XML reader (no DTD, no entity expansion): the
 * headers and records of a list are handed out as they end, the rest (an error, a resumption token, Identify,
 * metadata formats, sets) kept for the caller. A record's metadata is re-serialized as a standalone XML document
 * with the namespace declarations it needs, so that its bytes depend on the record only, never on the envelope
 * (`responseDate`, `request`) around it.
 * @see OAI-PMH 2.0 §3.2 (response format), §3.5 (flow control), §3.6 (errors), §4 (verbs)
 */
import { ResourceSyncError } from '../core/errors.js';
import { escapeAttribute, escapeText } from '../core/xml/escape.js';
import { XML_NS, type ResolvedName } from '../core/xml/namespaces.js';
import { XmlReader, type XmlAttribute, type XmlHandler } from '../core/xml/xml-reader.js';
import { LIMITS } from '../core/constants.js';
import {
  OAI_NS,
  parseDatestamp,
  type DeletedRecordSupport,
  type OaiIdentify,
  type OaiMetadataFormat,
  type OaiRecord,
  type OaiSet,
  type ResumptionToken,
} from './types.js';

/** An OAI-PMH error element. @see OAI-PMH 2.0 §3.6 */
export interface OaiErrorElement {
  code: string;
  message: string;
}

/** The longest simple value kept (an identifier, a datestamp, a token, a name). */
const MAX_FIELD = 64 * 1024;
/** Most values of a repeated field kept (adminEmail, setSpec of one header). */
const MAX_REPEATED = 1_000;

/** Re-serializes one element and its subtree as a standalone document. */
class MetadataCapture {
  readonly #parts: string[] = [];
  readonly #scopes: Map<string, string>[] = [];
  #size = 0;
  #depth = 0;

  constructor(private readonly maxChars: number) {}

  start(el: ResolvedName, attrs: XmlAttribute[], decls: [string, string][] | undefined, selfClosing: boolean): void {
    this.#depth++;
    const parent = this.#scopes[this.#scopes.length - 1] ?? new Map<string, string>([['xml', XML_NS], ['', '']]);
    const scope = new Map(parent);
    let out = `<${el.qname}`;
    const declare = (prefix: string, ns: string): void => {
      if (scope.get(prefix) === ns) return;
      scope.set(prefix, ns);
      out += prefix === '' ? ` xmlns="${escapeAttribute(ns)}"` : ` xmlns:${prefix}="${escapeAttribute(ns)}"`;
    };
    // the element's own declarations as written, then those the envelope made and the element needs
    for (const [prefix, ns] of decls ?? []) declare(prefix, ns);
    declare(el.prefix, el.ns);
    for (const a of attrs) if (a.prefix !== '') declare(a.prefix, a.ns);
    for (const a of attrs) out += ` ${a.qname}="${escapeAttribute(a.value)}"`;
    this.#scopes.push(scope);
    this.#push(selfClosing ? `${out}/>` : `${out}>`);
  }

  text(value: string): void {
    this.#push(escapeText(value));
  }

  /** True when the captured element has ended. */
  end(el: ResolvedName, selfClosed: boolean): boolean {
    if (!selfClosed) this.#push(`</${el.qname}>`);
    this.#scopes.pop();
    return --this.#depth === 0;
  }

  result(): string {
    return `<?xml version="1.0" encoding="UTF-8"?>\n${this.#parts.join('')}\n`;
  }

  #push(s: string): void {
    this.#size += s.length;
    if (this.#size > this.maxChars) {
      throw new ResourceSyncError('RS_LIMIT_BYTES', `A record's metadata is longer than ${this.maxChars} characters.`, { data: { limit: this.maxChars } });
    }
    this.#parts.push(s);
  }
}

/** A header or record being read. */
interface Pending {
  identifier: string;
  datestamp: string;
  deleted: boolean;
  setSpecs: string[];
  metadata?: string;
}

/** The XML handler of one OAI-PMH response. Items are taken with {@link OaiResponseReader.take}. */
export class OaiResponseReader implements XmlHandler {
  readonly wantsWhitespace = true;
  /** The OAI-PMH error of the response, when it is one. */
  error: OaiErrorElement | undefined;
  /** The response's `responseDate`, the repository's clock. */
  responseDate: string | undefined;
  /** The resumption token of a list response (absent on a complete list). */
  token: ResumptionToken | undefined;
  readonly identify: Partial<OaiIdentify> & { adminEmail: string[] } = { adminEmail: [] };
  readonly formats: OaiMetadataFormat[] = [];
  readonly sets: OaiSet[] = [];
  /** Local names of the open elements. */
  readonly #path: string[] = [];
  #items: OaiRecord[] = [];
  #pending: Pending | undefined;
  #field: Record<string, string> = {};
  #text: string | undefined;
  #capture: MetadataCapture | undefined;
  #captured = false;
  #selfClosed: boolean[] = [];
  readonly #reader: XmlReader;

  constructor(private readonly maxRecordChars: number) {
    this.#reader = new XmlReader(this, {
      maxDepth: LIMITS.maxDepth,
      maxValueLength: Math.max(LIMITS.maxValueLength, maxRecordChars),
      maxAttributes: LIMITS.maxAttributes,
    });
  }

  /** Reads the next piece of the response's text. */
  feed(text: string): void {
    this.#reader.feed(text);
  }

  /** Ends the response; throws when it is incomplete or not OAI-PMH. */
  finish(): void {
    this.#reader.end();
  }

  /** The headers and records ended since the last call. */
  take(): OaiRecord[] {
    const items = this.#items;
    if (items.length > 0) this.#items = [];
    return items;
  }

  start(name: ResolvedName, attrs: XmlAttribute[], decls: [string, string][] | undefined, _pos: number, selfClosing: boolean): void {
    if (this.#capture !== undefined) {
      this.#selfClosed.push(selfClosing);
      this.#capture.start(name, attrs, decls, selfClosing);
      return;
    }
    const depth = this.#path.length;
    if (depth === 0 && (name.local !== 'OAI-PMH' || name.ns !== OAI_NS)) {
      throw new ResourceSyncError('RS_INVALID_DOCUMENT', `The response is not OAI-PMH 2.0 (its root is <${name.qname}>).`, { data: { root: name.qname, ns: name.ns } });
    }
    const parent = this.#path[depth - 1];
    this.#path.push(name.local);
    if (parent === 'metadata' && this.#pending !== undefined && !this.#captured) {
      this.#captured = true;
      this.#capture = new MetadataCapture(this.maxRecordChars);
      this.#selfClosed = [selfClosing];
      this.#capture.start(name, attrs, decls, selfClosing);
      return;
    }
    const attr = (local: string): string | undefined => attrs.find((a) => a.local === local && a.prefix === '')?.value;
    if (name.local === 'header') {
      this.#pending ??= { identifier: '', datestamp: '', deleted: false, setSpecs: [] };
      this.#pending.deleted = attr('status') === 'deleted';
    } else if (name.local === 'record' && depth === 2) {
      this.#pending = { identifier: '', datestamp: '', deleted: false, setSpecs: [] };
      this.#captured = false;
    } else if (name.local === 'error' && depth === 1) {
      this.error = { code: attr('code') ?? '', message: '' };
    } else if (name.local === 'resumptionToken' && depth === 2) {
      const size = attr('completeListSize');
      const cursor = attr('cursor');
      const expires = attr('expirationDate');
      this.token = {
        value: '',
        ...(expires === undefined ? {} : { expirationDate: expires }),
        ...(size === undefined || !/^\d+$/.test(size) ? {} : { completeListSize: Number(size) }),
        ...(cursor === undefined || !/^\d+$/.test(cursor) ? {} : { cursor: Number(cursor) }),
      };
    }
    this.#text = '';
  }

  text(value: string): void {
    if (this.#capture !== undefined) this.#capture.text(value);
    else if (this.#text !== undefined && this.#text.length + value.length <= MAX_FIELD) this.#text += value;
  }

  end(name: ResolvedName): void {
    if (this.#capture !== undefined) {
      if (this.#capture.end(name, this.#selfClosed.pop() ?? false)) {
        this.#pending!.metadata = this.#capture.result();
        this.#capture = undefined;
        this.#path.pop();
      }
      return;
    }
    const text = (this.#text ?? '').trim();
    this.#text = undefined;
    this.#path.pop();
    const parent = this.#path[this.#path.length - 1];
    const depth = this.#path.length;
    this.#endField(name.local, parent, depth, text);
  }

  #endField(local: string, parent: string | undefined, depth: number, text: string): void {
    const pending = this.#pending;
    if (parent === 'header' && pending !== undefined) {
      if (local === 'identifier') pending.identifier = text;
      else if (local === 'datestamp') pending.datestamp = text;
      else if (local === 'setSpec' && pending.setSpecs.length < MAX_REPEATED) pending.setSpecs.push(text);
    } else if (local === 'header' && depth === 2 && pending !== undefined) {
      this.#emit(pending); // ListIdentifiers
    } else if (local === 'record' && depth === 2 && pending !== undefined) {
      this.#emit(pending);
    } else if (local === 'responseDate' && depth === 1) {
      this.responseDate = text;
    } else if (local === 'error' && depth === 1 && this.error !== undefined) {
      this.error.message = text;
    } else if (local === 'resumptionToken' && depth === 2 && this.token !== undefined) {
      this.token.value = text;
    } else if (parent === 'Identify') {
      this.#identifyField(local, text);
    } else if (parent === 'metadataFormat' || parent === 'set') {
      this.#field[local] = text;
    } else if (local === 'metadataFormat') {
      const f = this.#field;
      this.formats.push({ metadataPrefix: f['metadataPrefix'] ?? '', schema: f['schema'] ?? '', metadataNamespace: f['metadataNamespace'] ?? '' });
      this.#field = {};
    } else if (local === 'set' && depth === 2) {
      this.sets.push({ setSpec: this.#field['setSpec'] ?? '', setName: this.#field['setName'] ?? '' });
      this.#field = {};
    }
  }

  #identifyField(local: string, text: string): void {
    const id = this.identify;
    if (local === 'adminEmail') {
      if (id.adminEmail.length < MAX_REPEATED) id.adminEmail.push(text);
    } else if (local === 'deletedRecord') {
      id.deletedRecord = (['no', 'transient', 'persistent'].includes(text) ? text : 'no') as DeletedRecordSupport;
    } else if (local === 'granularity') {
      id.granularity = text === 'YYYY-MM-DDThh:mm:ssZ' ? text : 'YYYY-MM-DD';
    } else if (local === 'repositoryName' || local === 'baseURL' || local === 'protocolVersion' || local === 'earliestDatestamp') {
      id[local] = text;
    }
  }

  #emit(p: Pending): void {
    this.#pending = undefined;
    const time = parseDatestamp(p.datestamp);
    if (p.identifier === '' || time === undefined) {
      throw new ResourceSyncError('RS_INVALID_DOCUMENT', `A header has ${p.identifier === '' ? 'no identifier' : `an invalid datestamp '${p.datestamp}'`}.`, {
        data: { identifier: p.identifier, datestamp: p.datestamp },
      });
    }
    this.#items.push({
      identifier: p.identifier,
      datestamp: p.datestamp,
      time,
      deleted: p.deleted,
      setSpecs: p.setSpecs,
      ...(p.metadata === undefined || p.deleted ? {} : { metadata: p.metadata }),
    });
  }
}
