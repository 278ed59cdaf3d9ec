/**
 * What the XML reader (./xml-reader.ts) reports to: an attribute with its resolved name, and the handler called
 * for every start tag, end tag and run of character data.
 */
import type { ResolvedName } from './namespaces.js';

export interface XmlAttribute {
  /** Qualified name as written. */
  qname: string;
  prefix: string;
  local: string;
  /** Namespace URI; '' for unprefixed attributes (they are in no namespace). */
  ns: string;
  value: string;
}

export interface XmlHandler {
  /**
   * An element starts. `name` is shared by every element of that name in its scope (do not change
   * it); `attrs` (namespace declarations excluded) and `decls` are the handler's to keep; `pos` is
   * the tag's offset, valid for `XmlReader.lineAt` during this call only.
   */
  start(name: ResolvedName, attrs: XmlAttribute[], decls: [string, string][] | undefined, pos: number, selfClosing: boolean): void;
  end(name: ResolvedName): void;
  /** Character data (references decoded, line ends normalised); may arrive in several pieces. */
  text(value: string): void;
  /** When false, runs of white space between elements are not reported (a fast path). */
  readonly wantsWhitespace: boolean;
  /**
   * Optional fast path for a whole child element of the root at `pos` ('<'): returns the offset
   * past it when the handler has read all of it (with the same result as the events would give),
   * or -1 to have it parsed event by event.
   */
  fastChild?(buf: string, pos: number): number;
}
