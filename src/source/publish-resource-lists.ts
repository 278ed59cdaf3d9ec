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
  mapEntries,
  writeDoc,
  type Context,
  type SetPaths,
} from './publish-context.js';
import { copyAtomic } from './publish-files.js';
import type { SourceSnapshots } from './source-snapshots.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';

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
  snapshots: SourceSnapshots,
  paths: SetPaths,
  snapshot: { at: number; completed: number; fresh: boolean; upTo: string; now: boolean },
): Promise<{ url: string; archiveUrl: string; documents: string[]; holdsUpTo: number; written: boolean; dueInMs?: number }> {
  const { documentUrl, documentFile, capUrl, resBase, docUrl, linked } = paths;
  const ext = ctx.ext;
  const completed = snapshot.completed;
  const documents: string[] = [];
  const rlUrl = documentUrl(`resourcelist${ext}`);
  const rlArchiveUrl = documentUrl(`resourcelist-archive${ext}`);
  let generations = JSON.parse((await snapshots.getMeta('rl_generations')) ?? '[]') as RlGeneration[];
  const last = generations[generations.length - 1];
  // the latest generation lacks changes: those recorded since it (an older one knows only its `at`)
  const stale = last === undefined || (last.upTo !== undefined ? last.upTo !== snapshot.upTo : Number(snapshot.upTo) > last.at);
  // 'auto': at most every 20 times what the last one took to write, so that Resource Lists take at most 5% of the time
  const every = ctx.resourceListEveryMs === 'auto' ? 20 * Number((await snapshots.getMeta('rl_write_ms')) ?? '0') : ctx.resourceListEveryMs;
  const due = snapshot.now || every <= 0 || last === undefined || snapshot.at - last.at >= every;
  const written = snapshot.fresh || last === undefined || !existsSync(documentFile(`resourcelist${ext}`)) || (stale && due);
  if (written) {
    const started = performance.now();
    const n = (generations[generations.length - 1]?.n ?? 0) + 1;
    const h = header('resource-list', atTimes(snapshot.at, completed), { up: capUrl, links: archivesLn(rlArchiveUrl) });
    const res = await writeDocumentSet(
      h,
      mapEntries(snapshots.listing(), (listed) => linked(listed.path, listedEntry(resBase, listed))),
      {
        maxEntries: ctx.maxEntries,
        maxBytes: ctx.maxBytes,
        indexUrl: documentUrl(`resourcelist-${n}${ext}`),
        partUrl: (k) => documentUrl(`resourcelist-${n}-part${k}${ext}`),
        gzip: ctx.gzip,
        sink: ({ url }) => fileSink(documentFile(url.slice(docUrl.length))),
        partEntry: () => ({ md: { at: formatW3CDatetime(snapshot.at), completed: formatW3CDatetime(completed) } }),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      },
    );
    await copyAtomic(documentFile(`resourcelist-${n}${ext}`), documentFile(`resourcelist${ext}`));
    const files = [`resourcelist-${n}${ext}`, ...(res.indexed ? res.parts.map((p) => p.url.slice(docUrl.length)) : [])];
    generations.push({ n, at: snapshot.at, completed, files, upTo: snapshot.upTo });
    const keep = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
    for (const g of generations.slice(0, Math.max(0, generations.length - keep)))
      for (const name of g.files) rmSync(documentFile(name), { force: true });
    generations = generations.slice(-keep);
    await snapshots.setMeta('rl_generations', JSON.stringify(generations));
    await snapshots.setMeta('rl_write_ms', String(Math.round(performance.now() - started)));
  }
  await writeDoc(
    documentFile(`resourcelist-archive${ext}`),
    header('resource-list-archive', {}, { up: capUrl }),
    generations.map((g) => snapshotEntry(documentUrl(g.files[0]!), g.at, g.completed)),
    ctx.gzip,
  );
  documents.push(rlUrl, rlArchiveUrl, ...generations.flatMap((g) => g.files.map(documentUrl)));

  // the changes the latest generation holds: those up to `upTo` (older generations: up to their `at`)
  const newest = generations[generations.length - 1]!;
  const holdsUpTo = newest.upTo === undefined || newest.upTo === '' ? newest.at : Number(newest.upTo);
  // a generation put off by `every` is due then, whether more changes come or not
  const dueInMs = !written && stale && last !== undefined ? Math.max(1, every - (snapshot.at - last.at)) : undefined;
  return { url: rlUrl, archiveUrl: rlArchiveUrl, documents, holdsUpTo, written, ...(dueInMs === undefined ? {} : { dueInMs }) };
}
