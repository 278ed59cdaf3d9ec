/**
 * The Change Lists of a published set: the open Change List (§12.1), the closed ones, the Change List Index
 * in forward order (§12.2) and the Change List Archive (ResourceSync Archives); periods past the retention
 * are removed with their Change Dump packages.
 * @see Z39.99 §12; ResourceSync Archives §5
 */
import { existsSync, rmSync } from 'node:fs';
import { changeEntry, fromTimes, header, intervalEntry } from './documents.js';
import { archivesLn, map, pad, writeDoc, type Context, type SetPaths } from './publish-context.js';
import type { ChangePeriod, SnapshotStore } from './snapshot-store.js';

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
  store: SnapshotStore,
  paths: SetPaths,
  run: { fresh: boolean; changed: boolean; keepAfter: number },
): Promise<ChangeLists> {
  const { u, f, capUrl, resBase } = paths;
  const x = ctx.x;
  const documents: string[] = [];
  let dropped: ChangePeriod[] = [];
  // the Change Lists with changes the Resource List does not hold are kept: a Destination needs them after a baseline
  if (ctx.retention !== undefined) dropped = store.prunePeriods(ctx.retention, run.keepAfter);
  for (const p of dropped) {
    for (const name of [`changelist-${pad(p.id)}`, `changedump-${pad(p.id)}`, `changedump-${pad(p.id)}-manifest`])
      rmSync(f(name + x), { force: true });
    rmSync(f(`changedump-${pad(p.id)}.zip`), { force: true });
  }
  const periods = store.periods();
  const closed = periods.filter((p) => p.until !== undefined);
  const open = periods.find((p) => p.until === undefined)!;
  const indexUrl = closed.length > 0 ? u(`changelist-index${x}`) : undefined;
  const clArchiveLn = archivesLn(closed.length > 0 ? u(`changelist-archive${x}`) : undefined);
  for (const p of closed) {
    const name = `changelist-${pad(p.id)}${x}`;
    if (run.fresh || !existsSync(f(name))) {
      await writeDoc(
        f(name),
        header('change-list', fromTimes(p.from, p.until), capUrl, indexUrl, clArchiveLn),
        map(store.changes(p.id), (c) => changeEntry(resBase, c)),
        ctx.gzip,
      );
    }
    documents.push(u(name));
  }
  // The open Change List and the index change only with the changes: a quiet run rewrites neither.
  const listsChanged = run.fresh || run.changed || dropped.length > 0 || !existsSync(f(`changelist${x}`));
  if (listsChanged) {
    await writeDoc(
      f(`changelist${x}`),
      header('change-list', fromTimes(open.from), capUrl, indexUrl, clArchiveLn),
      map(store.changes(open.id), (c) => changeEntry(resBase, c)),
      ctx.gzip,
    );
  }
  documents.push(u(`changelist${x}`));
  if (closed.length > 0 && !listsChanged && existsSync(f(`changelist-index${x}`))) {
    documents.push(u(`changelist-index${x}`), u(`changelist-archive${x}`));
  } else if (closed.length > 0) {
    const first = closed[0]!;
    await writeDoc(
      f(`changelist-index${x}`),
      header('change-list-index', fromTimes(first.from), capUrl, undefined, clArchiveLn),
      [
        ...closed.map((p) => intervalEntry(u(`changelist-${pad(p.id)}${x}`), p.from, p.until)),
        intervalEntry(u(`changelist${x}`), open.from),
      ],
      ctx.gzip,
    );
    await writeDoc(
      f(`changelist-archive${x}`),
      header('change-list-archive', {}, capUrl),
      closed.map((p) => intervalEntry(u(`changelist-${pad(p.id)}${x}`), p.from, p.until)),
      ctx.gzip,
    );
    documents.push(u(`changelist-index${x}`), u(`changelist-archive${x}`));
  } else {
    rmSync(f(`changelist-index${x}`), { force: true });
    rmSync(f(`changelist-archive${x}`), { force: true });
  }

  return { closed, open, indexUrl, documents };
}
