/** Namespace scopes (Namespaces in XML 1.0, 3rd edition). */

export const XML_NS = 'http://www.w3.org/XML/1998/namespace';
export const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

/** An immutable set of in-scope prefix bindings; `''` is the default namespace. */
export class NamespaceScope {
  private constructor(private readonly map: ReadonlyMap<string, string>) {}

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
