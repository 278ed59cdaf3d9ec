/** Namespace scopes (Namespaces in XML 1.0, 3rd edition). */

export const XML_NS = 'http://www.w3.org/XML/1998/namespace';
export const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

/** A qualified name resolved in a scope. */
export interface ResolvedName {
  /** The qualified name as written. */
  qname: string;
  prefix: string;
  local: string;
  ns: string;
}

/** True for characters that may appear in a name but may not start an NCName (XML 1.0 NameChar minus NameStartChar). */
function notNcNameStart(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 46 || c === 45 || c === 0xb7 || (c >= 0x300 && c <= 0x36f) || c === 0x203f || c === 0x2040;
}
const CACHE_LIMIT = 4096;

/** An immutable set of in-scope prefix bindings; `''` is the default namespace. */
export class NamespaceScope {
  private readonly cache = new Map<string, ResolvedName | null>();

  private constructor(private readonly map: ReadonlyMap<string, string>) {}

  /**
   * Resolves an element name (or, when prefixed, an attribute name) in this scope; undefined when it
   * is not a valid qualified name or its prefix is undeclared. Results are cached per scope.
   */
  name(qname: string): ResolvedName | undefined {
    let r = this.cache.get(qname);
    if (r === undefined) {
      r = this.compute(qname);
      if (this.cache.size < CACHE_LIMIT) this.cache.set(qname, r);
    }
    return r ?? undefined;
  }

  private compute(qname: string): ResolvedName | null {
    const colon = qname.indexOf(':');
    if (colon < 0) return { qname, prefix: '', local: qname, ns: this.resolve('') ?? '' };
    const prefix = qname.slice(0, colon);
    const local = qname.slice(colon + 1);
    if (prefix === '' || local === '' || local.includes(':') || notNcNameStart(local.charCodeAt(0))) return null;
    const ns = this.resolve(prefix);
    return ns === undefined ? null : { qname, prefix, local, ns };
  }

  static empty(): NamespaceScope {
    return new NamespaceScope(new Map([['xml', XML_NS]]));
  }

  /** A new scope with `decls` added (the receiver is unchanged). */
  with(decls: readonly (readonly [string, string])[]): NamespaceScope {
    const m = new Map(this.map);
    for (const [prefix, uri] of decls) m.set(prefix, uri);
    return new NamespaceScope(m);
  }

  /** The namespace bound to `prefix`; `''` for an unprefixed name with no default namespace; undefined if undeclared. */
  resolve(prefix: string): string | undefined {
    const v = this.map.get(prefix);
    if (prefix === '') return v ?? '';
    return v === '' ? undefined : v;
  }

  /** Every binding in scope (prefix → URI), default namespace included when set. */
  bindings(): ReadonlyMap<string, string> {
    return this.map;
  }

  /** Why a declaration `xmlns[:prefix]="uri"` is not allowed, or undefined if it is. */
  static declarationProblem(prefix: string, uri: string): string | undefined {
    if (prefix === 'xmlns') return "the prefix 'xmlns' must not be declared";
    if (prefix === 'xml' && uri !== XML_NS) return "the prefix 'xml' may only be bound to the XML namespace";
    if (prefix !== 'xml' && uri === XML_NS) return 'the XML namespace may only be bound to the prefix xml';
    if (uri === XMLNS_NS) return 'the xmlns namespace must not be declared';
    if (prefix !== '' && uri === '') return `the prefix '${prefix}' cannot be undeclared in XML 1.0`;
    if (prefix.includes(':')) return `'${prefix}' is not a valid prefix`;
    return undefined;
  }
}
