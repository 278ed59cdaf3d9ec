/**
 * What `check` reports: the documents reached, the issues found (validator issues of each document, and the
 * check's own rules), and the totals that say whether the Source conforms.
 */
import type { Severity } from '../core/validate/index.js';
import type { Authority } from '../client/authority.js';
import type { HttpGet } from '../client/http.js';
import type { DestinationNote } from '../destination/notes.js';

/** One issue found by `check`: a validator issue of a document, or a cross-document, package or resource rule. */
export interface CheckIssue {
  /** Validator code (src/core/validate) or check code (`CHECK_CODES`). */
  code: string;
  severity: Severity;
  /** The document, package or resource concerned. */
  url: string;
  message: string;
  section: string;
  line?: number;
  path?: string;
}

/** A document (or package) reached. */
export interface CheckedDocument {
  url: string;
  /** Document kind id (`change-list`…), `package` for a ZIP package of a dump, null when unidentified. */
  kind: string | null;
  capability?: string;
  /** The version of the standard it was validated under: the one it implies (1.1 when it uses `datetime`). */
  spec?: '1.0' | '1.1';
  /** The document that lists it (or links to it); none for the starting points. */
  parent?: string;
  at?: string;
  completed?: string;
  from?: string;
  until?: string;
  /** Entries (URLs or sitemaps) read, or files in a package. */
  entries: number;
  /** Bytes received (decoded), or the package's listed length when it was not downloaded. */
  bytes: number;
  /** HTTP status when it was not 200. */
  status?: number;
  errors: number;
  warnings: number;
}

/** Progress of a check. */
export interface CheckProgress {
  phase: 'discovery' | 'documents' | 'packages' | 'resources';
  documents: number;
  entries: number;
  resources: number;
  requests: number;
}

/** Options of `check`. */
export interface CheckOptions {
  /** Where to start: an origin, a Source Description, Capability List, list, resource or HTML page. */
  url: string;
  http: HttpGet;
  authority: Authority;
  signal?: AbortSignal;
  /** Resources to fetch and compare with the lists, spread over all lists. Default 300. */
  sample?: number;
  /** Most documents fetched (packages included). Default 1000. */
  maxDocuments?: number;
  /** Requests per second at most; 0 for no pacing. Default 20. */
  rate?: number;
  /** Download and open dump packages. Default true. */
  packages?: boolean;
  /** Largest package downloaded, bytes. Default 256 MiB. */
  maxPackageBytes?: number;
  /** Where packages are downloaded (a temporary folder inside it, removed at the end). Default the OS's. */
  tmpDir?: string;
  /** Levels of documents below the starting points that are fetched (the Source Description is level 0). Default no limit. */
  maxDepth?: number;
  /**
   * Most time for one request, its whole body included (documents, packages, resources, discovery's reads), ms;
   * a document past it is `document-too-slow`. Default 120,000.
   */
  deadlineMs?: number;
  /** Check discovery by every route (well-known URI, robots.txt, HTML links). Default true. */
  discoveryRules?: boolean;
  /** Random numbers in [0, 1) for the sample. Default `Math.random`. */
  random?: () => number;
  onProgress?: (p: CheckProgress) => void;
}

/** What `check` found. */
export interface CheckReport {
  start: string;
  sourceDescription?: string;
  capabilityLists: string[];
  documents: CheckedDocument[];
  issues: CheckIssue[];
  /** Resources fetched and compared. */
  sampled: number;
  /** Resources listed in the Resource Lists read. */
  resources: number;
  /** Sampled resources that sent a Link rel="resourcesync" header. */
  linkHeaders: number;
  errors: number;
  warnings: number;
  /** No error: every MUST that was checked holds. */
  conformant: boolean;
  durationMs: number;
  /** Notes of discovery, with their codes (see `NOTES` of the Destination). */
  notes: DestinationNote[];
}

/** Counts each issue on the document it concerns; returns the number of errors. */
export function countIssues(documents: CheckedDocument[], issues: readonly CheckIssue[]): number {
  const byUrl = new Map(documents.map((d) => [d.url, d]));
  let errors = 0;
  for (const i of issues) {
    if (i.severity === 'error') errors++;
    const d = byUrl.get(i.url);
    if (d === undefined) continue;
    if (i.severity === 'error') d.errors++;
    else d.warnings++;
  }
  return errors;
}
