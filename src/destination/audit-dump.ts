import { documentKindById, isPartOf, manifestKind } from '../core/model/document-kinds.js';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { isAbsoluteLoc, loadDocument, resolveLoc, type DocumentContext } from './documents.js';
import { orderChanges } from './plan.js';

const RESOURCE_DUMP = documentKindById('resource-dump');
const CHANGE_DUMP = documentKindById('change-dump');
/** The kind of the manifests an audit of a dump-only Source reads as its Resource List. */
export const RESOURCE_DUMP_MANIFEST = manifestKind(RESOURCE_DUMP)!;
const CHANGE_DUMP_MANIFEST = manifestKind(CHANGE_DUMP)!;

/** The manifests of a Resource Dump (or Resource Dump Index), the dump's `at`, and the packages whose manifest is not linked. */
export interface DumpInventory {
  at?: string;
  /** Resource Dump Manifest URLs (`rs:ln rel="contents"` of each package, §11.1), in dump order. */
  manifests: string[];
  /** Packages without a `contents` link, or parts that could not be read: what the audit cannot compare. */
  unreadable: { url: string; code: string; message: string }[];
}

/**
 * What a Source whose only inventory is a Resource Dump offers: the manifest of each package, read through the
 * package's `contents` link (§11.1) instead of downloading the package. An index is followed one level (§11).
 * @see Z39.99 §11.1, §11.2
 */
export async function dumpInventory(
  ctx: DocumentContext,
  url: string,
  flavor: 'resource' | 'change' = 'resource',
): Promise<DumpInventory> {
  const top = await loadDocument(ctx, url);
  const kind = flavor === 'resource' ? RESOURCE_DUMP : CHANGE_DUMP;
  const out: DumpInventory = { manifests: [], unreadable: [] };
  if (top.md?.at !== undefined) out.at = top.md.at;
  const dumps = [top];
  if (isPartOf(kind, top.kind)) {
    dumps.length = 0;
    for (const e of top.entries) {
      const part = resolveLoc(e.loc, top.finalUrl);
      try {
        dumps.push(await loadDocument(ctx, part));
      } catch (err) {
        if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
        out.unreadable.push({
          url: part,
          code: isResourceSyncError(err) ? err.code : 'RS_IO',
          message: messageOf(err),
        });
      }
    }
  }
  for (const d of dumps) {
    for (const e of d.entries) {
      const contents = e.ln?.find((l) => l.rel === 'contents');
      const pkg = resolveLoc(e.loc, d.finalUrl);
      if (contents === undefined) {
        out.unreadable.push({
          url: pkg,
          code: 'RS_NOT_RESOURCESYNC',
          message: `Resource Dump package '${pkg}' links no manifest (rel="contents"): not audited.`,
        });
      } else if (contents.href !== undefined) out.manifests.push(resolveLoc(contents.href, d.finalUrl));
    }
  }
  return out;
}

/**
 * What a Source whose only inventory is its Change Dumps offers: the last change of each resource over every
 * package's Change Dump Manifest (§13.2), in forward order; a resource whose last change is `deleted` is not on
 * offer. The manifests are read through the packages' `contents` links.
 * @see Z39.99 §13
 */
export async function changeDumpInventory(
  ctx: DocumentContext,
  url: string,
): Promise<{ last: Map<string, Entry>; unreadable: DumpInventory['unreadable'] }> {
  const inv = await dumpInventory(ctx, url, 'change');
  const last = new Map<string, Entry>();
  const changes: Entry[] = [];
  for (const m of inv.manifests) {
    try {
      const doc = await loadDocument(ctx, m);
      if (doc.kind?.id !== CHANGE_DUMP_MANIFEST.id)
        throw new ResourceSyncError(
          'RS_INVALID_DOCUMENT',
          `Document '${m}' is not a Change Dump Manifest (${doc.kind?.name ?? 'unknown kind'}).`,
          { data: { url: m } },
        );
      for (const e of doc.entries)
        changes.push(isAbsoluteLoc(e.loc) ? e : { ...e, loc: resolveLoc(e.loc, doc.finalUrl) });
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      inv.unreadable.push({
        url: m,
        code: isResourceSyncError(err) ? err.code : 'RS_IO',
        message: messageOf(err),
      });
    }
  }
  for (const e of orderChanges(changes).entries) {
    last.delete(e.loc);
    last.set(e.loc, e);
  }
  return { last, unreadable: inv.unreadable };
}
