/**
 * The validator: rules of Z39.99 §7–13 and Appendix A (and of ResourceSync 1.1, the Archives and
 * the Notification specifications) applied to a document header and then to its entries one at a
 * time, so that a 50,000-entry list is checked in constant memory as it streams from the parser.
 * The rules come from the document's kind (src/core/model/kinds/). Its layers: `issue-collector.ts` (issues,
 * notes, limits), `attribute-rules.ts` (attribute syntax), `header-rules.ts` (the top level); this module
 * has the entry rules, the order of entries and the public functions.
 * @see Z39.99 §7–13, Appendix A
 */
import { CHANGEFREQS, CAPABILITY_LIST_ENTRIES } from '../constants.js';
import { FingerprintSet } from '../fingerprint-set.js';
import { readManifestPath } from '../manifest-path.js';
import type { DocumentKind, EntryOrder, EntryRules } from '../model/document-kinds.js';
import { CHANGE_NOTIFICATION, FRAMEWORK_NOTIFICATION, frameworkChangeAllowed } from '../model/notification.js';
import type { DocumentHeader, Entry, Md, ParseNote, ResourceSyncDocument } from '../model/types.js';
import { parseW3CDatetime, type W3CDatetime } from '../w3c-datetime.js';
import type { IssueCode, ValidateOptions, ValidationIssue } from './codes.js';
import { HeaderRules, INDEX_NAMES } from './header-rules.js';

/** A streaming validator for one document: feed entries in document order, then call `end()`. */
export interface Validator {
  /** The kind identified from the header's root and capability (undefined if unknown). */
  readonly kind: DocumentKind | undefined;
  /** Checks one entry. Entries must come in document order. */
  entry(e: Entry): void;
  /**
   * Finishes the document (rules that need every entry) and returns all issues, ordered by line
   * (issues without a line first). `notes` are the parser's structural notes for the document.
   */
  end(notes?: readonly ParseNote[]): ValidationIssue[];
}

/** What the validator needs from the parser's reader (`readDocument` in src/core/xml/read-document.ts). */
export interface EntrySource {
  header: DocumentHeader;
  entries: AsyncIterable<Entry> | Iterable<Entry>;
  /** The same entries in arrays (the parser's `batches`); used instead of `entries` when present. */
  batches?: AsyncIterable<readonly Entry[]>;
  /** The parser's structural notes; read after the entries, as they grow while reading. */
  notes?: readonly ParseNote[];
}

const CHANGEFREQ_SET: ReadonlySet<string> = new Set(CHANGEFREQS);
const KNOWN_ENTRY_CAPABILITIES: ReadonlySet<string> = new Set<string>([
  ...CAPABILITY_LIST_ENTRIES,
  'capabilitylist',
  'description',
  // notification channels listed in a Capability List (Change Notification §4, Framework Notification §5)
  CHANGE_NOTIFICATION,
  FRAMEWORK_NOTIFICATION,
]);
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const PRIORITY = /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/;



/** End of the period a W3C Datetime names (a date `2013-01-03` runs until the end of that day). */
function periodEnd(d: W3CDatetime): number {
  const t = new Date(d.ms);
  switch (d.granularity) {
    case 'year':
      return Date.UTC(t.getUTCFullYear() + 1, 0, 1) - 1;
    case 'month':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + 1, 1) - 1;
    case 'day':
      return d.ms + 86_400_000 - 1;
    default:
      return d.ms;
  }
}

class StreamingValidator extends HeaderRules implements Validator {
  private readonly v11: boolean;
  /** The kind's entry rules (those of an unknown kind: nothing required, anything allowed). */
  private readonly rules: EntryRules | undefined;
  private readonly changeAllowed: boolean;
  private readonly lastmodRequired: boolean;
  private readonly pathAllowed: boolean;
  private readonly pathRule: EntryRules['path'];
  private readonly datetimeAllowed: boolean;
  private readonly order: EntryOrder | undefined;
  // interval of the document, for datetime (1.1) and lastmod (1.0) checks
  private readonly fromMs: number | undefined;
  private readonly untilMs: number | undefined;
  private readonly fromText: string;
  private readonly untilText: string;
  // state
  private index = 0;
  private lastOrderMs = -Infinity;
  private lastOrderText = '';
  private outOfOrder = 0;
  private capabilities: Set<string> | undefined;
  private locs: FingerprintSet | undefined;
  private ended = false;

  constructor(header: DocumentHeader, options: ValidateOptions) {
    super(header, options);
    this.v11 = (options.spec ?? '1.1') === '1.1';
    const kind = this.kind;
    const rules = kind?.entry;
    this.rules = rules;
    this.changeAllowed = rules === undefined || rules.change === 'required';
    this.lastmodRequired = !this.v11 && rules?.lastmod === 'required-1.0';
    this.pathRule = rules?.path ?? 'forbidden';
    this.pathAllowed = rules === undefined || rules.path !== 'forbidden';
    this.datetimeAllowed = this.v11 && (rules === undefined || rules.datetime);
    this.order = kind?.order;
    if (rules?.uniqueLocs === true) this.locs = new FingerprintSet({ capacity: 50_000 });
    if (rules?.capability === 'advertised') this.capabilities = new Set();

    const md = header.md;
    const from = md?.from !== undefined ? parseW3CDatetime(md.from, true) : undefined;
    const until = md?.until !== undefined ? parseW3CDatetime(md.until, true) : undefined;
    this.fromMs = from?.ms;
    // Lenient: an `until` before `from` is ignored (see checkPairs), so the interval is open at its end.
    this.untilMs = until && !(this.lenient && from && until.ms < from.ms) ? periodEnd(until) : undefined;
    this.fromText = md?.from ?? '';
    this.untilText = md?.until ?? '';
    this.checkHeader(header, kind);
  }












  // ---- entries ---------------------------------------------------------------------------------

  entry(e: Entry): void {
    const index = ++this.index;
    this.at = index;
    const line = e.line;
    this.entryLoc(e.loc, line);
    const lastmod = this.entryLastmod(e, line);
    if (e.changefreq !== undefined && !CHANGEFREQ_SET.has(e.changefreq)) {
      this.report('changefreq-invalid', { value: e.changefreq }, '/changefreq', line);
    }
    if (e.priority !== undefined && !PRIORITY.test(e.priority)) {
      this.report('priority-invalid', { value: e.priority }, '/priority', line);
    }

    const md = e.md;
    let datetime: W3CDatetime | undefined;
    let from: W3CDatetime | undefined;
    if (md !== undefined) {
      datetime = this.entryMd(md, line);
      from = md.from !== undefined ? parseW3CDatetime(md.from, true) : undefined;
    } else {
      this.entryMdMissing(line);
    }

    const ln = e.ln;
    if (ln !== undefined) {
      for (let i = 0; i < ln.length; i++) this.checkLn(ln[i]!, i + 1, line);
    }
    if (this.order !== undefined) this.entryOrder(e, lastmod, datetime, from, line);
    if (!this.v11 && lastmod !== undefined && this.lastmodRequired) {
      if ((this.fromMs !== undefined && lastmod.ms < this.fromMs) || (this.untilMs !== undefined && lastmod.ms > this.untilMs)) {
        this.report('lastmod-outside-interval', { value: e.lastmod, from: this.fromText, until: this.untilText }, '/lastmod', line, this.section);
      }
    }
  }

  /** `<loc>`: present, absolute, and (where the kind asks) not listed twice. */
  private entryLoc(loc: string | undefined, line: number | undefined): void {
    if (loc === undefined || loc.length === 0) {
      this.report('loc-missing', {}, '/loc', line);
      return;
    }
    // The Sitemaps protocol: a URL begins with its protocol. Lenient: resolved against the document's URL.
    if (!ABSOLUTE_URI.test(loc)) this.report(this.lenient ? 'tolerated-loc-relative' : 'loc-not-absolute', { value: loc }, '/loc', line);
    if (this.locs?.seen(loc) === true) this.report('loc-duplicate', { value: loc }, '/loc', line);
  }

  /** `<lastmod>`: a valid time where given, present where the kind requires it; returns the time. */
  private entryLastmod(e: Entry, line: number | undefined): W3CDatetime | undefined {
    if (e.lastmod !== undefined) {
      const lastmod = this.time(e.lastmod, 'lastmod', '/lastmod', line);
      if (this.rules?.lastmod === 'discouraged') this.report('lastmod-discouraged', { kind: this.name }, '/lastmod', line, this.section);
      return lastmod;
    }
    if (this.lastmodRequired) {
      // Lenient: 1.0 producers leave <lastmod> off deletions (the time of a deletion is often unknown).
      const code = this.lenient && e.md?.change === 'deleted' ? 'tolerated-lastmod-missing' : 'lastmod-missing';
      this.report(code, { kind: this.name }, '/lastmod', line, this.section);
    }
    return undefined;
  }

  /** An entry's `<rs:md>`: its attributes, times, change, path and capability; returns its datetime. */
  private entryMd(md: Md, line: number | undefined): W3CDatetime | undefined {
    const mdPath = '/rs:md';
    this.checkMdAttributes(md, line, false);
    if (md.type === undefined && this.rules?.typeRecommended === true && md.change !== 'deleted') {
      this.report('type-missing', { kind: this.name }, '/rs:md/@type', line, this.section);
    }
    if (this.rules?.packageMetadata === true && (md.type === undefined || md.length === undefined)) {
      this.report('package-metadata-missing', { kind: this.name }, mdPath, line, this.section);
    }
    const datetime = this.entryTimes(md, mdPath, line);
    this.entryChange(md, mdPath, line);
    this.entryPath(md, mdPath, line);
    if (this.rules?.capability !== undefined) this.entryCapability(md.capability, mdPath, line);
    if (this.rules?.capability === 'framework') this.entryFrameworkChange(md, line);
    return datetime;
  }

  /** An entry without `<rs:md>`: each attribute the kind requires or recommends is missing. */
  private entryMdMissing(line: number | undefined): void {
    const mdPath = '/rs:md';
    if (this.rules?.change === 'required') this.report('change-missing', { kind: this.name }, mdPath, line, this.section);
    if (this.pathRule !== 'forbidden') this.report('path-missing', { kind: this.name, expected: '' }, mdPath, line, this.section);
    if (this.rules?.typeRecommended === true) this.report('type-missing', { kind: this.name }, mdPath, line, this.section);
    if (this.rules?.packageMetadata === true) this.report('package-metadata-missing', { kind: this.name }, mdPath, line, this.section);
    if (this.rules?.from === 'recommended') this.report('entry-from-missing', { kind: this.name }, mdPath, line, this.section);
    if (this.rules?.capability === 'advertised' || this.rules?.capability === 'framework') {
      this.report('entry-capability-missing', { kind: this.name }, mdPath, line, this.section);
    }
  }

  /** Order of the entries by their time: 1.0 changes are timed by `<lastmod>`; 1.1 by the datetime attribute. */
  private entryOrder(e: Entry, lastmod: W3CDatetime | undefined, datetime: W3CDatetime | undefined, from: W3CDatetime | undefined, line: number | undefined): void {
    const md = e.md;
    let key: W3CDatetime | undefined;
    let keyName: string;
    let keyText: string | undefined;
    if (this.order === 'change') {
      if (this.v11 || this.rules?.lastmod !== 'required-1.0') {
        // 1.0 changes are timed by <lastmod>, notifications by datetime in both versions
        key = datetime;
        keyName = 'datetime';
        keyText = md?.datetime;
      } else {
        key = lastmod;
        keyName = 'lastmod';
        keyText = e.lastmod;
      }
    } else if (this.order === 'package') {
      key = from ?? lastmod;
      keyName = from ? 'from' : 'lastmod';
      keyText = from ? md?.from : e.lastmod;
    } else {
      key = from;
      keyName = 'from';
      keyText = md?.from;
    }
    if (key !== undefined) this.checkOrder(key.ms, keyName, keyText ?? '', '', line);
  }

  private entryTimes(md: Md, mdPath: string, line: number | undefined): W3CDatetime | undefined {
    let datetime: W3CDatetime | undefined;
    if (md.datetime !== undefined) {
      datetime = this.time(md.datetime, 'datetime', '/rs:md/@datetime', line);
      if (!this.datetimeAllowed) {
        const expected = this.v11
          ? `is used in Change Lists, Change Dump Manifests and notifications, not in a ${this.name}`
          : 'is not defined in ResourceSync 1.0 (it was added in 1.1)';
        this.report('datetime-unexpected', { expected }, '/rs:md/@datetime', line);
      } else if (datetime !== undefined && this.v11 && this.fromMs !== undefined) {
        if (datetime.ms < this.fromMs || (this.untilMs !== undefined && datetime.ms > this.untilMs)) {
          this.report('datetime-outside-interval', { value: md.datetime, from: this.fromText, until: this.untilText }, '/rs:md/@datetime', line);
        }
      }
    }
    const hasAt = md.at !== undefined || md.completed !== undefined;
    const hasFrom = md.from !== undefined || md.until !== undefined;
    if (hasAt || hasFrom) {
      const at = this.time(md.at, 'at', '/rs:md/@at', line);
      const completed = this.time(md.completed, 'completed', '/rs:md/@completed', line);
      const from = this.time(md.from, 'from', '/rs:md/@from', line);
      const until = this.time(md.until, 'until', '/rs:md/@until', line);
      this.checkPairs(md, at, completed, from, until, mdPath, line);
      // Appendix A, Table 4: the entry times a kind's entries must not carry
      const params = { kind: this.name };
      if (this.rules?.at === 'forbidden') {
        if (md.at !== undefined) this.report('at-forbidden', { ...params, attribute: 'at' }, '/rs:md/@at', line);
        if (md.completed !== undefined) this.report('at-forbidden', { ...params, attribute: 'completed' }, '/rs:md/@completed', line);
      }
      if (this.rules?.from === 'forbidden') {
        if (md.from !== undefined) this.report('from-forbidden', { ...params, attribute: 'from' }, '/rs:md/@from', line);
        if (md.until !== undefined) this.report('from-forbidden', { ...params, attribute: 'until' }, '/rs:md/@until', line);
      }
    }
    if (this.rules?.from === 'recommended' && md.from === undefined) {
      this.report('entry-from-missing', { kind: this.name }, mdPath, line, this.section);
    }
    return datetime;
  }

  private entryChange(md: Md, mdPath: string, line: number | undefined): void {
    const change = md.change;
    if (change === undefined) {
      if (this.rules?.change === 'required') this.report('change-missing', { kind: this.name }, '/rs:md/@change', line, this.section);
      return;
    }
    if (change !== 'created' && change !== 'updated' && change !== 'deleted') {
      this.report('change-invalid', { value: change }, '/rs:md/@change', line);
    }
    if (!this.changeAllowed) this.report('change-unexpected', { kind: this.name }, '/rs:md/@change', line);
  }

  private entryPath(md: Md, mdPath: string, line: number | undefined): void {
    const path = md.path;
    if (path === undefined) {
      if (this.pathRule === 'all' || (this.pathRule === 'not-deleted' && md.change !== 'deleted')) {
        const expected = this.pathRule === 'not-deleted' ? ' (except for change="deleted")' : '';
        this.report('path-missing', { kind: this.name, expected }, '/rs:md/@path', line, this.section);
      }
      return;
    }
    if (!this.pathAllowed) this.report('path-unexpected', { kind: this.name }, '/rs:md/@path', line);
    else if (path.charCodeAt(0) !== 47) {
      // Lenient: `a/b` and `./a/b` (resync-build, CORE) are read relative to the package root.
      const read = this.lenient ? readManifestPath(path) : undefined;
      if (read !== undefined) this.report('tolerated-path-relative', { value: path, expected: read.name }, '/rs:md/@path', line, this.section);
      else this.report('path-not-absolute', { value: path }, '/rs:md/@path', line, this.section);
    }
  }

  private entryCapability(capability: string | undefined, mdPath: string, line: number | undefined): void {
    const path = '/rs:md/@capability';
    if (capability === undefined) {
      this.report('entry-capability-missing', { kind: this.name }, path, line, this.section);
      return;
    }
    if (this.rules?.capability === 'capabilitylist') {
      if (capability === 'resourcelist' && this.lenient && this.kind?.id === 'source-description')
        this.report('tolerated-description-entry-capability', { value: capability }, path, line, this.section);
      else if (capability !== 'capabilitylist') {
        this.report('entry-capability-invalid', { value: capability, kind: this.name, expected: 'capabilitylist' }, path, line, this.section);
      }
      return;
    }
    const renamed = INDEX_NAMES[capability];
    if (renamed !== undefined) {
      if (this.lenient) this.report('tolerated-capability-index-name', { value: capability, expected: renamed }, path, line);
      else this.report('capability-index-name', { value: capability, expected: renamed }, path, line);
    } else if (!KNOWN_ENTRY_CAPABILITIES.has(capability)) {
      this.report('entry-capability-unknown', { value: capability }, path, line);
    }
    const set = this.capabilities;
    if (set !== undefined) {
      const normal = renamed ?? capability;
      if (set.has(normal)) {
        this.report(this.lenient ? 'tolerated-capability-duplicate' : 'capability-duplicate', { value: capability }, path, line, this.section);
      }
      else set.add(normal);
    }
  }

  /** @see Framework Notification §2.1, Table 2 */
  private entryFrameworkChange(md: Md, line: number | undefined): void {
    const { capability, change } = md;
    if (capability === undefined || change === undefined) return;
    if (!frameworkChangeAllowed(INDEX_NAMES[capability] ?? capability, change)) {
      this.report('framework-change-not-allowed', { value: change, expected: capability }, '/rs:md/@change', line, 'ResourceSync Framework Notification §2.1, Table 2');
    }
  }

    private checkOrder(ms: number, keyName: string, keyText: string, path: string, line: number | undefined): void {
    if (ms < this.lastOrderMs) {
      if (this.lenient) {
        this.outOfOrder++;
      } else {
        const code: IssueCode =
          this.order === 'package' ? 'packages-out-of-order' : this.order === 'archive' ? 'archive-out-of-order' : 'changes-out-of-order';
        const params = { kind: this.name, attribute: keyName, value: keyText, previous: this.lastOrderText };
        this.report(code, params, path, line, code === 'packages-out-of-order' ? undefined : this.section);
      }
    }
    this.lastOrderMs = ms;
    this.lastOrderText = keyText;
  }

  // ---- end -------------------------------------------------------------------------------------

  end(notes?: readonly ParseNote[]): ValidationIssue[] {
    if (this.ended) return this.issues;
    this.ended = true;
    this.at = 0;
    this.addNotes(notes);
    if (this.outOfOrder > 0) {
      this.report('tolerated-out-of-order', { kind: this.name, count: this.outOfOrder }, '', undefined, this.section);
    }
    return this.finish();
  }
}

/**
 * A streaming validator for the document whose header is given: call `entry()` for each entry in
 * document order, then `end()` for the issues. Memory stays constant per entry, except for the set
 * of capabilities of a Capability List and a fingerprint of each of the (first 50,000) locs of a
 * Resource List or Resource Dump Manifest, used to report repeated entries.
 * @example
 * const v = createValidator(reader.header, { spec: '1.0' });
 * for await (const e of reader.entries) v.entry(e);
 * const issues = v.end();
 */
export function createValidator(header: DocumentHeader, options: ValidateOptions = {}): Validator {
  return new StreamingValidator(header, options);
}

/**
 * Validates a whole document held in memory.
 * @example validateDocument(doc, { spec: '1.0' }).filter((i) => i.severity === 'error')
 */
export function validateDocument(doc: ResourceSyncDocument, options: ValidateOptions = {}): ValidationIssue[] {
  const v = createValidator(doc, options);
  for (const e of doc.entries) v.entry(e);
  return v.end(doc.notes);
}

/**
 * Validates a document as it streams from the parser (`readDocument`), one entry at a time.
 * Parser errors (malformed XML, limits) propagate as the parser's ResourceSyncError.
 * @example const { issues, entries } = await validate(await readDocument(openInput(file)), { spec: '1.1' });
 */
export async function validate(reader: EntrySource, options: ValidateOptions = {}): Promise<{ issues: ValidationIssue[]; entries: number }> {
  const v = createValidator(reader.header, options);
  let entries = 0;
  if (reader.batches !== undefined) {
    for await (const batch of reader.batches) {
      for (const e of batch) v.entry(e);
      entries += batch.length;
    }
  } else {
    for await (const e of reader.entries) {
      v.entry(e);
      entries++;
    }
  }
  return { issues: v.end(reader.notes), entries };
}
