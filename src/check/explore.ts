/**
 * `explore`: a Source's document tree (Source Description, Capability Lists, lists, indexes, archives,
 * dumps and their packages) with each document's times, entry count and size, from the same bounded crawl
 * as `check` (no resource is fetched, no package downloaded).
 * @see Z39.99 §6.1 (structure), §6.2 (navigation)
 */
import { check, type CheckOptions, type CheckedDocument } from './check.js';

/** One document of the tree. */
export interface TreeNode {
  url: string;
  /** Document kind id, `package` for a dump's ZIP package, null when unidentified. */
  kind: string | null;
  capability?: string;
  at?: string;
  completed?: string;
  from?: string;
  until?: string;
  /** Entries read (0 for a package, which is not downloaded). */
  entries: number;
  /** Bytes of the document, or the package's listed length. */
  bytes: number;
  /** HTTP status when it was not 200. */
  status?: number;
  children: TreeNode[];
}

/** What `explore` returns. */
export interface ExploreResult {
  start: string;
  sourceDescription?: string;
  roots: TreeNode[];
  documents: number;
}

/** Options of `explore`: those of `check` that shape the crawl. */
export type ExploreOptions = Pick<
  CheckOptions,
  'url' | 'http' | 'authority' | 'signal' | 'maxDocuments' | 'maxDepth' | 'rate' | 'deadlineMs' | 'onProgress'
>;

/**
 * Builds the tree from documents that name their parent; documents whose parent is unknown are roots.
 * Children keep the order in which they were reached (document order of their lister).
 */
export function documentTree(documents: readonly CheckedDocument[]): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  for (const d of documents) {
    nodes.set(d.url, {
      url: d.url,
      kind: d.kind,
      ...(d.capability === undefined ? {} : { capability: d.capability }),
      ...(d.at === undefined ? {} : { at: d.at }),
      ...(d.completed === undefined ? {} : { completed: d.completed }),
      ...(d.from === undefined ? {} : { from: d.from }),
      ...(d.until === undefined ? {} : { until: d.until }),
      entries: d.entries,
      bytes: d.bytes,
      ...(d.status === undefined ? {} : { status: d.status }),
      children: [],
    });
  }
  const roots: TreeNode[] = [];
  for (const d of documents) {
    const node = nodes.get(d.url)!;
    const parent = d.parent === undefined ? undefined : nodes.get(d.parent);
    if (parent === undefined || parent === node) roots.push(node);
    else parent.children.push(node);
  }
  return roots;
}

/**
 * Crawls a Source and returns its document tree.
 * @example
 * const { roots } = await explore({ url: 'http://127.0.0.1:8080/', http, authority, maxDepth: 2 });
 */
export async function explore(options: ExploreOptions): Promise<ExploreResult> {
  const report = await check({ ...options, sample: 0, packages: false, discoveryRules: false });
  return {
    start: report.start,
    ...(report.sourceDescription === undefined ? {} : { sourceDescription: report.sourceDescription }),
    roots: documentTree(report.documents),
    documents: report.documents.length,
  };
}
