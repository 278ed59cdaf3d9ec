/**
 * Issue codes of the validator: stable kebab-case strings, one per rule. Codes never change
 * meaning; match on `code`, never on `message`. The message, default severity and the section of
 * the standard that each code enforces are in one table, `MESSAGES` (./messages.ts).
 *
 * Errors are the MUSTs of Z39.99 §7–13 and Appendix A (and of the Archives and Notification
 * specifications for their documents); warnings are its SHOULDs and recommendations, and the
 * `tolerated-*` codes report what lenient mode accepted instead of failing.
 */

export const ISSUE_CODES = [
  // document level
  'wrong-namespace',
  'child-element-mismatch',
  'md-missing',
  'md-repeated',
  'element-repeated',
  'unexpected-element',
  'unexpected-text',
  'unknown-element',
  'header-after-entries',
  'capability-missing',
  'capability-unknown',
  'capability-root-mismatch',
  'capability-index-name',
  'capabilitylist-index',
  'at-missing',
  'from-missing',
  'until-missing',
  'at-forbidden',
  'from-forbidden',
  'completed-before-at',
  'until-before-from',
  'completed-without-at',
  'until-without-from',
  'datetime-invalid',
  'datetime-not-utc',
  'up-link-missing',
  'up-link-repeated',
  'up-link-unexpected',
  'describedby-link-missing',
  // links
  'ln-rel-missing',
  'ln-href-missing',
  'pri-out-of-range',
  // attributes
  'rs-attribute-prefixed',
  'attribute-not-namespaced',
  'hash-syntax',
  'hash-not-hex',
  'hash-digest-length',
  'length-invalid',
  'changefreq-invalid',
  'priority-invalid',
  // entries
  'loc-missing',
  'loc-not-absolute',
  'loc-duplicate',
  'lastmod-missing',
  'lastmod-discouraged',
  'lastmod-outside-interval',
  'change-missing',
  'change-invalid',
  'change-unexpected',
  'datetime-unexpected',
  'datetime-outside-interval',
  'changes-out-of-order',
  'packages-out-of-order',
  'archive-out-of-order',
  'entry-capability-missing',
  'entry-capability-invalid',
  'entry-capability-unknown',
  'capability-duplicate',
  'entry-from-missing',
  'path-missing',
  'path-not-absolute',
  'path-unexpected',
  'type-missing',
  'package-metadata-missing',
  // notifications (Change Notification / Framework Notification 1.0.1)
  'framework-change-not-allowed',
  'capability-legacy-name',
  // reporting
  'issues-truncated',
  // lenient mode: what was accepted instead of failing
  'tolerated-out-of-order',
  'tolerated-datetime-no-zone',
  'tolerated-hash-encoding',
  'tolerated-capability-index-name',
  'tolerated-up-link-missing',
  'tolerated-from-missing',
  'tolerated-at-missing',
  'tolerated-path-relative',
  'tolerated-datetime-space',
  'tolerated-draft-modified',
  'tolerated-md-merged',
  'tolerated-capability-duplicate',
  'tolerated-lastmod-missing',
  'tolerated-until-before-from',
  'tolerated-loc-relative',
  'tolerated-capability-legacy-name',
  'tolerated-draft-modified-ignored',
  'tolerated-completed-before-at',
  'tolerated-at-instead-of-from',
  'tolerated-description-entry-capability',
] as const;

/** One validator rule. */
export type IssueCode = (typeof ISSUE_CODES)[number];

/** MUST → `error`; SHOULD / recommended / tolerated → `warning`. */
export type Severity = 'error' | 'warning';

/**
 * A problem found in a document.
 * @example { code: 'hash-not-hex', severity: 'error', section: 'Z39.99 §7', line: 12,
 *   path: 'urlset/url[3]/rs:md/@hash', message: "hash 'sha-256:f4Ox…' has a digest that is not hexadecimal" }
 */
export interface ValidationIssue {
  code: IssueCode;
  severity: Severity;
  /** One sentence; values quoted. The location is in `path` and `line`. */
  message: string;
  /** The citation of the rule, e.g. `Z39.99 §12.1`, `Z39.99 Appendix A`, `ResourceSync Archives §5`. */
  section: string;
  /** 1-based line in the source document, when known. */
  line?: number;
  /** Where in the document: `urlset/url[3]/rs:md/@hash` (entries counted from 1). */
  path?: string;
}

/** Validator options. */
export interface ValidateOptions {
  /** Which version of the standard: Z39.99-2014 (1.0) or Z39.99-2017 (1.1, the default). */
  spec?: '1.0' | '1.1';
  /**
   * `strict` (default) enforces the standard. `lenient` is for consumers (the Destination): it
   * accepts what real producers publish (reverse order, date-times without a zone or with a space for
   * `T`, base64 or `urn:` hashes, `changelistindex`, a missing `up` link, `from` or `at`, manifest
   * paths without the leading slash, a draft-era `modified`, a repeated `rs:md` or capability, a
   * deletion without `lastmod`, `until` before `from`, a relative `loc`) and reports each with a
   * `tolerated-*` warning that says how it was read.
   */
  mode?: 'strict' | 'lenient';
  /** Issues reported per code before the rest are summarised in one `issues-truncated`. Default 100. */
  maxIssuesPerCode?: number;
}

/** True when any issue is an error. */
export function hasErrors(issues: readonly ValidationIssue[]): boolean {
  return issues.some((i) => i.severity === 'error');
}
