/**
 * The time line: the entries of a Source's Change Lists, most recent first, a page at a time. Change Lists
 * are taken newest first (by `from`), and each one from its end: a Change List lists its changes in
 * chronological order, so the most recent are its last entries. The entry counts come from the crawl,
 * and a page reads only the part of one or two lists it shows.
 * @see Z39.99 §12.1 (Change List: entries ordered by the time of the change), §12.2 (`from`, `until`)
 */
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import type { TreeNode } from '../check/explore.js';
import type { HttpGet } from '../client/http.js';
import { readRange } from './entries.js';

/** One change on the time line. */
export interface TimelineEntry {
  loc: string;
  /** `created`, `updated` or `deleted` (the entry's `rs:md change`). */
  change?: string;
  /** When the change happened: the entry's `datetime` (1.1), else its `lastmod`. */
  datetime?: string;
  /** The Change List that lists it. */
  list: string;
}

/** A page of the time line. */
export interface TimelinePage {
  page: number;
  pageSize: number;
  entries: TimelineEntry[];
  /** Changes listed by all Change Lists (entry counts of the crawl). */
  total: number;
  /** Change Lists read from. */
  lists: number;
  more: boolean;
}

/** The Change Lists of a tree, newest first. */
function changeLists(roots: readonly TreeNode[]): TreeNode[] {
  const out: TreeNode[] = [];
  const seen = new Set<string>();
  const walk = (n: TreeNode): void => {
    if (n.kind === 'change-list' && !seen.has(n.url)) {
      seen.add(n.url);
      out.push(n);
    }
    for (const c of n.children) walk(c);
  };
  for (const r of roots) walk(r);
  const time = (n: TreeNode): number => parseW3CDatetime(n.from ?? n.at ?? '', true)?.ms ?? -Infinity;
  return out.sort((a, b) => time(b) - time(a));
}

/**
 * Reads page `page` of the time line.
 * @example const p = await readTimeline(http, explored.roots, 0, 100);
 */
export async function readTimeline(
  http: HttpGet,
  roots: readonly TreeNode[],
  page: number,
  pageSize: number,
  signal?: AbortSignal,
): Promise<TimelinePage> {
  const lists = changeLists(roots);
  const total = lists.reduce((s, l) => s + l.entries, 0);
  const start = page * pageSize;
  const end = start + pageSize;
  const entries: TimelineEntry[] = [];
  let before = 0; // changes in the newer lists
  for (const list of lists) {
    const count = list.entries;
    const from = Math.max(start - before, 0);
    const to = Math.min(end - before, count);
    before += count;
    if (to <= from) {
      if (before >= end) break;
      continue;
    }
    // Recent-first positions [from, to) are document positions [count - to, count - from).
    const rows = await readRange(http, list.url, count - to, count - from, signal);
    for (const r of rows.reverse()) {
      const datetime = r.md?.datetime ?? r.lastmod;
      entries.push({
        loc: r.loc,
        ...(r.md?.change === undefined ? {} : { change: r.md.change }),
        ...(datetime === undefined ? {} : { datetime }),
        list: list.url,
      });
    }
    if (before >= end) break;
  }
  return { page, pageSize, entries, total, lists: lists.length, more: end < total };
}
