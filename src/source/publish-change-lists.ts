/**
 * The Change Lists of a published set: the open Change List (§12.1), the closed ones, the Change List Index
 * in forward order (§12.2) and the Change List Archive (ResourceSync Archives); periods past the retention
 * are removed with their Change Dump packages.
 * @see Z39.99 §12; ResourceSync Archives §5
 */
import { existsSync, rmSync } from 'node:fs';
import { changeEntry, fromTimes, header, intervalEntry } from './documents.js';
import { archivesLn, mapEntries, pad, writeDoc, type Context, type SetPaths } from './publish-context.js';
import type { ChangePeriod } from './snapshot-rows.js';
import type { SourceSnapshots } from './source-snapshots.js';

/** The Change Lists written: the closed periods, the open one, the index's URL when there is one, every document. */
export interface ChangeLists {
  closed: ChangePeriod[];
  open: ChangePeriod;
  indexUrl: string | undefined;
  documents: string[];
}

/**
 * Writes the Change Lists of the periods in the store. `run.fresh` rewrites the closed ones too; the open
 * Change List and the index are rewritten only when `run.changed` (a change, a period closed or dropped) or
 * `run.fresh`.
 */
export async function publishChangeLists(
  ctx: Context,
  snapshots: SourceSnapshots,
  paths: SetPaths,
  run: { fresh: boolean; changed: boolean; keepAfter: number },
): Promise<ChangeLists> {
  const { documentUrl, documentFile, capUrl, resBase, linked } = paths;
  const ext = ctx.ext;
  const documents: string[] = [];
  let dropped: ChangePeriod[] = [];
  // the Change Lists with changes the Resource List does not hold are kept: a Destination needs them after a baseline
  if (ctx.retention !== undefined) dropped = await snapshots.prunePeriods(ctx.retention, run.keepAfter);
  for (const p of dropped) {
    for (const name of [`changelist-${pad(p.id)}`, `changedump-${pad(p.id)}`, `changedump-${pad(p.id)}-manifest`])
      rmSync(documentFile(name + ext), { force: true });
    rmSync(documentFile(`changedump-${pad(p.id)}.zip`), { force: true });
  }
  const periods = await snapshots.periods();
  const closed = periods.filter((p) => p.until !== undefined);
  const open = periods.find((p) => p.until === undefined)!;
  const indexUrl = closed.length > 0 ? documentUrl(`changelist-index${ext}`) : undefined;
  const clArchiveLn = archivesLn(closed.length > 0 ? documentUrl(`changelist-archive${ext}`) : undefined);
  for (const p of closed) {
    const name = `changelist-${pad(p.id)}${ext}`;
    if (run.fresh || !existsSync(documentFile(name))) {
      await writeDoc(
        documentFile(name),
        header('change-list', fromTimes(p.from, p.until), { up: capUrl, index: indexUrl, links: clArchiveLn }),
        mapEntries(snapshots.changes(p.id), (c) => linked(c.path, changeEntry(resBase, c))),
        ctx.gzip,
      );
    }
    documents.push(documentUrl(name));
  }
  // The open Change List and the index change only with the changes: a quiet run rewrites neither.
  const listsChanged = run.fresh || run.changed || dropped.length > 0 || !existsSync(documentFile(`changelist${ext}`));
  if (listsChanged) {
    await writeDoc(
      documentFile(`changelist${ext}`),
      header('change-list', fromTimes(open.from), { up: capUrl, index: indexUrl, links: clArchiveLn }),
      mapEntries(snapshots.changes(open.id), (c) => linked(c.path, changeEntry(resBase, c))),
      ctx.gzip,
    );
  }
  documents.push(documentUrl(`changelist${ext}`));
  if (closed.length > 0 && !listsChanged && existsSync(documentFile(`changelist-index${ext}`))) {
    documents.push(documentUrl(`changelist-index${ext}`), documentUrl(`changelist-archive${ext}`));
  } else if (closed.length > 0) {
    const first = closed[0]!;
    await writeDoc(
      documentFile(`changelist-index${ext}`),
      header('change-list-index', fromTimes(first.from), { up: capUrl, links: clArchiveLn }),
      [
        ...closed.map((p) => intervalEntry(documentUrl(`changelist-${pad(p.id)}${ext}`), p.from, p.until)),
        intervalEntry(documentUrl(`changelist${ext}`), open.from),
      ],
      ctx.gzip,
    );
    await writeDoc(
      documentFile(`changelist-archive${ext}`),
      header('change-list-archive', {}, { up: capUrl }),
      closed.map((p) => intervalEntry(documentUrl(`changelist-${pad(p.id)}${ext}`), p.from, p.until)),
      ctx.gzip,
    );
    documents.push(documentUrl(`changelist-index${ext}`), documentUrl(`changelist-archive${ext}`));
  } else {
    rmSync(documentFile(`changelist-index${ext}`), { force: true });
    rmSync(documentFile(`changelist-archive${ext}`), { force: true });
  }

  return { closed, open, indexUrl, documents };
}
