/**
 * The elements shared by every ResourceSync document: `<urlset>`/`<sitemapindex>` with `rs:md` and
 * `rs:ln`, and `<url>`/`<sitemap>` entries. Attribute values are kept exactly as written (strings), so
 * that the validator can report malformed values and a parse → write round trip is lossless; use
 * `parseW3CDatetime`, `parseHashes` and `parseLength` to read them as values.
 * @see Z39.99 §7, Table 2 and Table 3
 */

/** An attribute from a namespace other than ResourceSync's, kept for the round trip. @see Z39.99 §7 */
export interface ForeignAttribute {
  /** Namespace URI ('' for no namespace). */
  ns: string;
  /** Prefix as written (may be ''). */
  prefix: string;
  local: string;
  value: string;
}

/**
 * An element from another namespace (or an unknown element), kept as serialized XML. `xml` is a
 * standalone fragment: it declares every namespace prefix it uses.
 */
export interface ForeignElement {
  ns: string;
  local: string;
  xml: string;
}

/**
 * `<rs:md>`: metadata about the document (top level) or about an entry's resource.
 * @see Z39.99 §7, Table 3; ResourceSync 1.1 adds `datetime`
 */
export interface Md {
  capability?: string;
  at?: string;
  completed?: string;
  from?: string;
  until?: string;
  change?: string;
  /** 1.1: the time of the change. */
  datetime?: string;
  encoding?: string;
  hash?: string;
  length?: string;
  path?: string;
  type?: string;
  /** Attributes of other namespaces, and unknown unprefixed attributes (reported by the validator). */
  extra?: ForeignAttribute[];
}

/** `<rs:ln>`: a link to a related document or resource. @see Z39.99 §7, §14 */
export interface Ln {
  rel?: string;
  href?: string;
  hash?: string;
  length?: string;
  modified?: string;
  path?: string;
  pri?: string;
  type?: string;
  encoding?: string;
  extra?: ForeignAttribute[];
}

export const MD_ATTRIBUTES = [
  'capability',
  'at',
  'completed',
  'from',
  'until',
  'change',
  'datetime',
  'encoding',
  'hash',
  'length',
  'path',
  'type',
] as const satisfies readonly (keyof Md)[];

export const LN_ATTRIBUTES = [
  'rel',
  'href',
  'hash',
  'length',
  'modified',
  'path',
  'pri',
  'type',
  'encoding',
] as const satisfies readonly (keyof Ln)[];

/** `<urlset>` (Sitemap) or `<sitemapindex>` (Sitemap index). @see Z39.99 §7 */
export type RootElement = 'urlset' | 'sitemapindex';

/** A `<url>` or `<sitemap>` child: one resource (or one document, in an index). @see Z39.99 §7 */
export interface Entry {
  loc: string;
  lastmod?: string;
  changefreq?: string;
  /** Sitemaps `<priority>`, kept if present. */
  priority?: string;
  md?: Md;
  ln?: Ln[];
  /** Elements of other namespaces inside the entry. */
  extensions?: ForeignElement[];
  /** 1-based line of the entry's start tag in the source document, when parsed. */
  line?: number;
}

/** What precedes the entries: the root element, its `rs:md` and its `rs:ln`s. */
export interface DocumentHeader {
  root: RootElement;
  /** Top-level `rs:md` (absent if the document lacks one: the validator reports it). */
  md?: Md;
  ln: Ln[];
  /** Namespace declarations on the root element other than the sitemap and ResourceSync ones. */
  namespaces?: Record<string, string>;
  /** Foreign attributes on the root element. */
  attributes?: ForeignAttribute[];
  /** Foreign elements at the top level, before the entries. */
  extensions?: ForeignElement[];
  /** 1-based line of the top-level `rs:md`, when parsed. */
  mdLine?: number;
}

/** A whole document in memory: for small documents and tests. Use the streaming API for lists. */
export interface ResourceSyncDocument extends DocumentHeader {
  entries: Entry[];
  /** Structural notes from the parser; present only when there are some. */
  notes?: ParseNote[];
}

/**
 * Structural observations made while parsing a well-formed document that does not have the shape
 * Z39.99 §7 gives ResourceSync documents. The parser keeps going; the validator turns each note into
 * an issue (error or warning by its code).
 */
export const PARSE_NOTE_CODES = [
  /** Root `<urlset>`/`<sitemapindex>` not in the Sitemap namespace. */
  'wrong-namespace',
  /** `<sitemap>` in a `<urlset>` or `<url>` in a `<sitemapindex>`. */
  'child-element-mismatch',
  /** A second `rs:md` in the same parent (its attributes are merged into the first). */
  'md-repeated',
  /** A second `<loc>`, `<lastmod>`, `<changefreq>` or `<priority>` in one entry. */
  'element-repeated',
  /** Top-level `rs:md`/`rs:ln` after the first entry. */
  'header-after-entries',
  /** An element of the Sitemap or ResourceSync namespace that has no place there (kept as an extension). */
  'unknown-element',
  /** An unprefixed attribute that ResourceSync does not define on `rs:md`/`rs:ln` (kept in `extra`). */
  'unknown-attribute',
  /** A ResourceSync attribute written with a namespace prefix (Z39.99 §7: "must not have an XML Namespace prefix"). */
  'rs-attribute-prefixed',
  /** Non-white-space text where only elements belong. */
  'unexpected-text',
  /** An element inside `<loc>`, `<lastmod>`, `<changefreq>` or `<priority>`. */
  'unexpected-element',
  /** A draft-era `modified` on the top-level `rs:md`, read as `at` or `until` (params: value, attribute). */
  'draft-modified',
] as const;
export type ParseNoteCode = (typeof PARSE_NOTE_CODES)[number];

export interface ParseNote {
  code: ParseNoteCode;
  /** 1-based line in the source document. */
  line: number;
  message: string;
  /** Values the validator puts in its message (e.g. `value`, `attribute`). */
  params?: Readonly<Record<string, string>>;
}
