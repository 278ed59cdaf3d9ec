import type { ForeignElement } from '../model/types.js';
import type { XmlAttribute } from './xml-reader.js';
import type { ResolvedName } from './namespaces.js';
import { escapeAttribute, escapeText } from './escape.js';

/**
 * Re-serializes an element of another namespace (and its subtree) as a standalone XML fragment, so
 * that extensions survive a parse → write round trip. Namespace declarations are added where the
 * fragment needs them, whatever the original document declared on its ancestors.
 */
export class ForeignCapture {
  private readonly parts: string[] = [];
  private depth = 0;
  private readonly scopes: Map<string, string>[] = [];
  private readonly top: ResolvedName;

  constructor(el: ResolvedName, attrs: XmlAttribute[]) {
    this.top = el;
    this.start(el, attrs);
  }

  start(el: ResolvedName, attrs: XmlAttribute[]): void {
    this.depth++;
    const parentScope = this.scopes[this.scopes.length - 1];
    let scope = parentScope ?? new Map<string, string>([['', '']]);
    let decls = '';
    const need = (prefix: string, ns: string): void => {
      if (prefix === 'xml') return;
      if (scope.get(prefix) === ns) return;
      if (scope === parentScope || (parentScope === undefined && scope.size === 1 && decls === '')) scope = new Map(scope);
      scope.set(prefix, ns);
      decls += prefix === '' ? ` xmlns="${escapeAttribute(ns)}"` : ` xmlns:${prefix}="${escapeAttribute(ns)}"`;
    };
    need(el.prefix, el.ns);
    for (const a of attrs) if (a.prefix !== '') need(a.prefix, a.ns);
    this.scopes.push(scope);
    let s = `<${el.qname}${decls}`;
    for (const a of attrs) s += ` ${a.qname}="${escapeAttribute(a.value)}"`;
    this.parts.push(`${s}>`);
  }

  text(value: string): void {
    this.parts.push(escapeText(value));
  }

  /** Returns true when the captured element itself has ended. */
  end(el: ResolvedName): boolean {
    this.parts.push(`</${el.qname}>`);
    this.scopes.pop();
    return --this.depth === 0;
  }

  result(): ForeignElement {
    return { ns: this.top.ns, local: this.top.local, xml: this.parts.join('') };
  }
}
