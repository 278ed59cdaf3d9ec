/**
 * The Resource List of a published set (§10): one generation per snapshot that changed, split into a Resource
 * List Index and its parts when it is long (`writeDocumentSet`, src/core/xml/write-document-set.ts), kept for
 * the Resource List Archive (ResourceSync Archives). `resourcelist.xml` is a copy of the latest generation's
 * list (or index).
 * @see Z39.99 §10.1, §10.2; ResourceSync Archives §3
 */
import { existsSync, rmSync } from 'node:fs';
import { writeDocumentSet } from '../core/xml/write-document-set.js';
import { fileSink } from '../node/file-sink.js';
import { atTimes, header, listedEntry, snapshotEntry } from './documents.js';
import {
  archivesLn,
  DEFAULT_SNAPSHOT_RETENTION,
  map,
  ts,
  writeDoc,
  type Context,
  type SetPaths,
} from './publish-context.js';
import { copyAtomic } from './publish-files.js';
import type { SnapshotStore } from './snapshot-store.js';

/** One generation of the Resource List (a snapshot that changed). */
interface RlGeneration {
  n: number;
  at: number;
  completed: number;
  /** The list (or index) first, then its parts. */
  files: string[];
  /** The store's `changed_at` it holds the changes up to. */
  upTo?: string;
}

/**
 * Writes a new generation of the Resource List when the snapshot holds changes the latest one does not (or
 * when there is none, or `fresh`), at most as often as `ctx.resourceListEveryMs` says unless `now` (a scan); drops the
 * generations past the retention, and writes the Resource List Archive. Returns the list's and archive's URLs,
 * every document of the family, the time up to which the latest generation holds the changes (the Change
 * Lists after it must be kept), whether a generation was written, and, when one lacking changes was put off by
 * `resourceListEveryMs`, in how many ms it is due (`dueInMs`).
 */
export async function publishResourceLists(
  ctx: Context,
  store: SnapshotStore,
  paths: SetPaths,
  snapshot: { at: number; completed: number; fresh: boolean; upTo: string; now: boolean },
): Promise<{ url: string; archiveUrl: string; documents: string[]; holdsUpTo: number; written: boolean; dueInMs?: number }> {
  const { u, f, capUrl, resBase, docUrl } = paths;
  const x = ctx.x;
  const completed = snapshot.completed;
  const documents: string[] = [];
  const rlUrl = u(`resourcelist${x}`);
  const rlArchiveUrl = u(`resourcelist-archive${x}`);
  let generations = JSON.parse(store.getMeta('rl_generations') ?? '[]') as RlGeneration[];
  const last = generations[generations.length - 1];
  // the latest generation lacks changes: those recorded since it (an older one knows only its `at`)
  const stale = last === undefined || (last.upTo !== undefined ? last.upTo !== snapshot.upTo : Number(snapshot.upTo) > last.at);
  // 'auto': at most every 20 times what the last one took to write, so that Resource Lists take at most 5% of the time
  const every = ctx.resourceListEveryMs === 'auto' ? 20 * Number(store.getMeta('rl_write_ms') ?? '0') : ctx.resourceListEveryMs;
  const due = snapshot.now || every <= 0 || last === undefined || snapshot.at - last.at >= every;
  const written = snapshot.fresh || last === undefined || !existsSync(f(`resourcelist${x}`)) || (stale && due);
  if (written) {
    const started = performance.now();
    const n = (generations[generations.length - 1]?.n ?? 0) + 1;
    const h = header('resource-list', atTimes(snapshot.at, completed), capUrl, undefined, archivesLn(rlArchiveUrl));
    const res = await writeDocumentSet(
      h,
      map(store.listing(), (x) => listedEntry(resBase, x)),
      {
        maxEntries: ctx.maxEntries,
        maxBytes: ctx.maxBytes,
        indexUrl: u(`resourcelist-${n}${x}`),
        partUrl: (k) => u(`resourcelist-${n}-part${k}${x}`),
        gzip: ctx.gzip,
        sink: ({ url }) => fileSink(f(url.slice(docUrl.length))),
        partEntry: () => ({ md: { at: ts(snapshot.at), completed: ts(completed) } }),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      },
    );
    await copyAtomic(f(`resourcelist-${n}${x}`), f(`resourcelist${x}`));
    const files = [`resourcelist-${n}${x}`, ...(res.indexed ? res.parts.map((p) => p.url.slice(docUrl.length)) : [])];
    generations.push({ n, at: snapshot.at, completed, files, upTo: snapshot.upTo });
    const keep = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
    for (const g of generations.slice(0, Math.max(0, generations.length - keep)))
      for (const name of g.files) rmSync(f(name), { force: true });
    generations = generations.slice(-keep);
    store.setMeta('rl_generations', JSON.stringify(generations));
    store.setMeta('rl_write_ms', String(Math.round(performance.now() - started)));
  }
  await writeDoc(
    f(`resourcelist-archive${x}`),
    header('resource-list-archive', {}, capUrl),
    generations.map((g) => snapshotEntry(u(g.files[0]!), g.at, g.completed)),
    ctx.gzip,
  );
  documents.push(rlUrl, rlArchiveUrl, ...generations.flatMap((g) => g.files.map(u)));

  // the changes the latest generation holds: those up to `upTo` (older generations: up to their `at`)
  const newest = generations[generations.length - 1]!;
  const holdsUpTo = newest.upTo === undefined || newest.upTo === '' ? newest.at : Number(newest.upTo);
  // a generation put off by `every` is due then, whether more changes come or not
  const dueInMs = !written && stale && last !== undefined ? Math.max(1, every - (snapshot.at - last.at)) : undefined;
  return { url: rlUrl, archiveUrl: rlArchiveUrl, documents, holdsUpTo, written, ...(dueInMs === undefined ? {} : { dueInMs }) };
}
