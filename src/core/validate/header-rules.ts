/**
 * The rules of a document's top level, read from its kind (src/core/model/kinds/): the capability names a
 * kind for the root element, the time attributes Appendix A requires or forbids, and the `up` and
 * `describedby` links.
 * @see Z39.99 §6.1, §6.2, Appendix A
 */
import { documentKind, documentKindById, type DocumentKind, type TimeAttribute } from '../model/document-kinds.js';
import { CHANGE_NOTIFICATION, LEGACY_CHANGE_NOTIFICATION } from '../model/notification.js';
import type { DocumentHeader, Md } from '../model/types.js';
import { AttributeRules } from './attribute-rules.js';
import type { IssueCode, ValidateOptions } from './codes.js';

/** Misnamed index capabilities seen in the wild → the capability the standard gives them. @see Z39.99 §6.1 */
export const INDEX_NAMES: Readonly<Record<string, string>> = {
  changelistindex: 'changelist',
  resourcelistindex: 'resourcelist',
  resourcedumpindex: 'resourcedump',
  changedumpindex: 'changedump',
};
/** The code of a missing top-level time attribute, and what lenient reading reports instead. */
const MISSING: Readonly<Record<TimeAttribute, readonly [IssueCode, IssueCode]>> = {
  at: ['at-missing', 'tolerated-at-missing'],
  completed: ['completed-without-at', 'completed-without-at'],
  from: ['from-missing', 'tolerated-from-missing'],
  until: ['until-missing', 'until-missing'],
};

function kindName(kind: DocumentKind | undefined): string {
  return kind?.name ?? 'ResourceSync document';
}
/** The kind of a document and the rules of its top level, over the attribute rules. */
export abstract class HeaderRules extends AttributeRules {
  /** The kind identified from the header's root and capability (undefined if unknown). */
  readonly kind: DocumentKind | undefined;
  protected readonly name: string;
  /** The citation of the kind's rules. */
  protected readonly section: string;

  constructor(header: DocumentHeader, options: ValidateOptions) {
    super(header, options);
    const kind = this.headerKind(header);
    this.kind = kind;
    this.name = kindName(kind);
    this.section = kind ? kind.citation : 'Z39.99 §7';
  }

  protected headerKind(header: DocumentHeader): DocumentKind | undefined {
    const capability = header.md?.capability;
    if (capability === undefined) return undefined;
    const known = documentKind(header.root, capability);
    if (known) return known;
    const renamed = INDEX_NAMES[capability];
    if (renamed !== undefined && this.lenient) return documentKind(header.root, renamed);
    return undefined;
  }

  protected checkHeader(header: DocumentHeader, kind: DocumentKind | undefined): void {
    const md = header.md;
    const mdPath = '/rs:md';
    const line = header.mdLine;
    if (!md) {
      this.report('md-missing', {}, mdPath, undefined);
    } else {
      const capability = md.capability;
      if (capability === undefined) {
        this.report('capability-missing', {}, '/rs:md/@capability', line);
      } else if (!kind) {
        const renamed = INDEX_NAMES[capability];
        if (renamed !== undefined) {
          this.report('capability-index-name', { value: capability, expected: renamed }, '/rs:md/@capability', line);
        } else if (documentKind(this.root === 'urlset' ? 'sitemapindex' : 'urlset', capability)) {
          this.report('capability-root-mismatch', { value: capability, root: this.root }, '/rs:md/@capability', line);
        } else {
          this.report('capability-unknown', { value: capability }, '/rs:md/@capability', line);
        }
      } else if (INDEX_NAMES[capability] !== undefined) {
        this.report(
          'tolerated-capability-index-name',
          { value: capability, expected: kind.capability },
          '/rs:md/@capability',
          line,
        );
      }
      if (capability === LEGACY_CHANGE_NOTIFICATION) {
        const params = { value: capability, expected: CHANGE_NOTIFICATION };
        this.report(
          this.lenient ? 'tolerated-capability-legacy-name' : 'capability-legacy-name',
          params,
          '/rs:md/@capability',
          line,
        );
      }
      if (kind?.id === 'capability-list-index') this.report('capabilitylist-index', {}, '', line);
      this.checkTopTimes(md, kind, mdPath, line);
      this.checkMdAttributes(md, line, true);
    }
    this.checkHeaderLinks(header, kind);
  }

  protected checkTopTimes(md: Md, kind: DocumentKind | undefined, mdPath: string, line: number | undefined): void {
    const top = kind?.top;
    const params = { kind: this.name };
    // Lenient: resync-build writes Resource Dump Manifests without `at` and Change Lists without `from`;
    // a list without `from` is read as starting at its earliest entry.
    if (top !== undefined) {
      for (const a of top.required) {
        if (md[a] !== undefined) continue;
        const [strict, tolerated] = MISSING[a];
        const code = this.lenient && top.toleratedMissing.includes(a) ? tolerated : strict;
        this.report(code, params, `/rs:md/@${a}`, line, this.section);
      }
      for (const a of top.forbidden) {
        if (md[a] === undefined) continue;
        const snapshot = a === 'at' || a === 'completed';
        // Lenient: a Change List Index with `at`/`completed` in place of `from` (producers in the wild)
        const instead = this.lenient && snapshot && md.from === undefined && top.required.includes('from');
        const code = instead ? 'tolerated-at-instead-of-from' : snapshot ? 'at-forbidden' : 'from-forbidden';
        this.report(code, { ...params, attribute: a }, `/rs:md/@${a}`, line);
      }
    }
    const interval = top?.required.includes('from') === true;
    const at = this.time(md.at, 'at', '/rs:md/@at', line, true);
    const completed = this.time(md.completed, 'completed', '/rs:md/@completed', line, true);
    const from = this.time(md.from, 'from', '/rs:md/@from', line, true);
    const until = this.time(md.until, 'until', '/rs:md/@until', line, true);
    // (a list of changes without `from` is reported as such: 'until' without 'from' would say it twice)
    this.checkPairs(md, at, completed, from, until, mdPath, line, interval);
  }

  protected checkHeaderLinks(header: DocumentHeader, kind: DocumentKind | undefined): void {
    let up = 0;
    let describedby = 0;
    const links = header.ln;
    for (let i = 0; i < links.length; i++) {
      const ln = links[i]!;
      if (ln.rel === 'up') up++;
      else if (ln.rel === 'describedby') describedby++;
      this.checkLn(ln, i + 1, header.mdLine);
    }
    if (!kind) return;
    const rules = kind.links;
    if (up === 0 && rules.up === 'required') {
      const expected = documentKindById(rules.upTo ?? 'capability-list').name;
      if (this.lenient) this.report('tolerated-up-link-missing', { kind: kind.name }, '', undefined, this.section);
      else this.report('up-link-missing', { kind: kind.name, expected }, '', undefined, this.section);
    }
    if (up > 1) this.report('up-link-repeated', { count: up }, '', undefined);
    if (up > 0 && rules.up === 'forbidden') this.report('up-link-unexpected', {}, '', undefined);
    if (describedby === 0 && rules.describedby !== undefined) {
      this.report(
        'describedby-link-missing',
        { kind: kind.name, expected: rules.describedby },
        '',
        undefined,
        this.section,
      );
    }
  }
}
