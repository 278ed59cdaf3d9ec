/**
 * How the validator collects issues: each with its code's severity, message and section, a path to the element
 * concerned and a line; at most `maxIssuesPerCode` of a code (then one `issues-truncated`); the parser's
 * structural notes as issues; all of them ordered by line at the end.
 */
import type { DocumentHeader, ParseNote } from '../model/types.js';
import type { IssueCode, ValidateOptions, ValidationIssue } from './codes.js';
import { formatMessage, MESSAGES, type MessageParams } from './messages.js';

/** Note codes the validator derives from the model itself (with a path), so notes would repeat them. */
const NOTES_COVERED: ReadonlySet<string> = new Set(['rs-attribute-prefixed', 'unknown-attribute']);
const NOTE_CODES: ReadonlySet<string> = new Set<IssueCode>([
  'wrong-namespace',
  'child-element-mismatch',
  'md-repeated',
  'element-repeated',
  'unexpected-element',
  'unexpected-text',
  'unknown-element',
  'header-after-entries',
]);
/** The issues of one document, and where in it the validator is (entry, link) for their paths. */
export abstract class IssueCollector {
  protected readonly issues: ValidationIssue[] = [];
  private readonly counts = new Map<IssueCode, number>();
  private readonly max: number;
  protected readonly lenient: boolean;
  protected readonly root: string;
  private readonly child: string;
  /** Entry being checked (1-based; 0 while checking the header). */
  protected at = 0;
  /** Link being checked (1-based; 0 when not in a link). */
  protected lnAt = 0;

  constructor(header: DocumentHeader, options: ValidateOptions) {
    this.max = options.maxIssuesPerCode ?? 100;
    this.lenient = options.mode === 'lenient';
    this.root = header.root;
    this.child = header.root === 'urlset' ? 'url' : 'sitemap';
  }

  /**
   * Records an issue. `tail` is the path below the current element: the root, or the current
   * entry (`this.at`), or the current link of either (`this.lnAt`); paths are only built here.
   */
  protected report(
    code: IssueCode,
    params: MessageParams,
    tail: string,
    line: number | undefined,
    section?: string,
  ): void {
    const n = (this.counts.get(code) ?? 0) + 1;
    this.counts.set(code, n);
    if (n > this.max) return;
    const def = MESSAGES[code];
    let path = this.root;
    if (this.at > 0) path += `/${this.child}[${this.at}]`;
    if (this.lnAt > 0) path += `/rs:ln[${this.lnAt}]`;
    const issue: ValidationIssue = {
      code,
      severity: def.severity,
      message: formatMessage(code, params),
      section: section ?? def.section,
    };
    if (line !== undefined) issue.line = line;
    issue.path = path + tail;
    this.issues.push(issue);
  }

  /** Adds the parser's structural notes as issues (those the model does not already give). */
  protected addNotes(notes: readonly ParseNote[] | undefined): void {
    if (notes) {
      for (const note of notes) {
        if (NOTES_COVERED.has(note.code)) continue;
        let code: IssueCode;
        let params: MessageParams | undefined = note.params;
        if (note.code === 'md-repeated') code = this.lenient ? 'tolerated-md-merged' : 'md-repeated';
        else if (note.code === 'draft-modified') {
          // Strict: what it is without the draft, an attribute ResourceSync does not define.
          code = this.lenient ? 'tolerated-draft-modified' : 'attribute-not-namespaced';
          if (!this.lenient) params = { value: 'modified' };
        } else code = NOTE_CODES.has(note.code) ? (note.code as IssueCode) : 'unknown-element';
        const n = (this.counts.get(code) ?? 0) + 1;
        this.counts.set(code, n);
        if (n > this.max) continue;
        const def = MESSAGES[code];
        this.issues.push({
          code,
          severity: def.severity,
          message: formatMessage(code, params),
          section: def.section,
          line: note.line,
        });
      }
    }
  }

  /** Adds one `issues-truncated` per code past the limit and orders the issues by line (document-wide first). */
  protected finish(): ValidationIssue[] {
    for (const [code, n] of this.counts) {
      if (n > this.max)
        this.issues.push({
          code: 'issues-truncated',
          severity: 'warning',
          message: formatMessage('issues-truncated', { count: n - this.max, value: code }),
          section: MESSAGES[code].section,
        });
    }
    // Stable: by line, issues without a line (document-wide) first.
    this.issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    return this.issues;
  }
}
