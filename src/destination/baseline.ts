import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { documentKindById, isPartOf } from '../core/model/document-kinds.js';
import type { Entry } from '../core/model/types.js';
import { FingerprintSet, type SeenSet } from '../core/fingerprint-set.js';
import { openDocument, resolveLoc, type DocumentContext, type RemoteDocument } from './documents.js';
import type { ResourceApplier } from './resource-applier.js';
import { runPool } from './run-pool.js';
import { note } from './notes.js';

const RESOURCE_LIST = documentKindById('resource-list');

/** Options of {@link baseline}. */
export interface BaselineOptions extends DocumentContext {
  applier: ResourceApplier;
  /** Resources fetched at once. Default 16. */
  concurrency?: number;
  /** Called with each document as it is opened (for lenient validation and reporting). */
  onDocument?: (doc: RemoteDocument) => AsyncIterable<Entry>;
  /** Where the resources on offer are added (several capability sets share one); default a new set. */
  seen?: SeenSet;
  /**
   * Brings the entries of one Resource List in line somewhere else instead of through `applier` (a job queue's
   * workers); resolves once every entry is handed on. Default: `applier.apply` with `concurrency` at once.
   */
  applyEntries?: (entries: AsyncIterable<Entry>) => Promise<void>;
}

/** What a baseline saw. */
export interface BaselineResult {
  /** The Resource List's (or Index's) `at`, as written: changes after it are for incremental sync. */
  at?: string;
  /**
   * Every resource URI on offer, as fingerprints (16 bytes each, where the strings would pin the list's text): a
   * collision can only hide a deletion, never cause one.
   */
  seen: SeenSet;
  /** False when a part of the list could not be read: deletions must not be inferred. */
  complete: boolean;
  /** Documents read, in order. */
  documents: string[];
}

/**
 * Baseline synchronization from a Resource List or a Resource List Index: every part in index order, each
 * streamed, its resources fetched with bounded concurrency, verified and written atomically by the applier.
 * Deletions are not applied here (the caller compares `seen` with the state once every capability set is done).
 * @see Z39.99 §5.2 (Baseline Synchronization), §10.1, §10.2
 * @example const r = await baseline({ http, authority, applier }, 'http://example.com/resourcelist.xml');
 */
export async function baseline(options: BaselineOptions, url: string): Promise<BaselineResult> {
  const { applier } = options;
  const concurrency = options.concurrency ?? 16;
  const result: BaselineResult = { seen: options.seen ?? new FingerprintSet(), complete: true, documents: [] };
  const top = await openDocument(options, url);
  result.documents.push(url);
  // a Resource List, or an index whose parts are Resource Lists (§10.2)
  const index = isPartOf(RESOURCE_LIST, top.kind);
  if (top.kind?.id !== RESOURCE_LIST.id && !index) {
    await top.discard();
    throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${url}' is not a Resource List or Resource List Index (${top.kind?.name ?? 'unknown kind'}).`, { data: { url } });
  }
  if (top.header.md?.at !== undefined) result.at = top.header.md.at;
  const entriesOf = (doc: RemoteDocument): AsyncIterable<Entry> => (options.onDocument ? options.onDocument(doc) : doc.entries);

  const run = async (doc: RemoteDocument): Promise<void> => {
    applier.phase('baseline', undefined, doc.url);
    // the list's size is known once it has been read through (the last resources may still be under way); until
    // then, while its bytes come in, it is estimated from the share read (none for a list that came in one piece)
    const counted = async function* (): AsyncGenerator<Entry> {
      let n = 0;
      let estimate = 0;
      for await (const e of entriesOf(doc)) {
        n++;
        const share = doc.readShare();
        if (share !== undefined && share > 0 && share < 1) estimate = Math.round(n / share);
        if (estimate > 0) applier.estimateTotal(Math.max(estimate, n));
        result.seen.add(e.loc);
        // outside the sync's URL filter: counted and left alone here, before it is handed to anyone
        if (applier.includes(e.loc)) yield e;
      }
      applier.addTotal(n);
    };
    if (options.applyEntries !== undefined) await options.applyEntries(counted());
    else await runPool(counted(), concurrency, (entry, release) => applier.apply(entry, release));
    await applier.flush();
  };

  if (!index) {
    await run(top);
    return result;
  }
  // Resource List Index: the parts, in index order (§10.2)
  const parts: string[] = [];
  for await (const e of entriesOf(top)) parts.push(resolveLoc(e.loc, top.finalUrl));
  for (const part of parts) {
    try {
      const doc = await openDocument(options, part);
      result.documents.push(part);
      if (!isPartOf(doc.kind, top.kind)) {
        applier.warn(note('index-part-not-resource-list', { url, part, ...(doc.kind !== undefined ? { kind: doc.kind.name } : {}) }));
        result.complete = false;
        await doc.discard();
        continue;
      }
      if (result.at === undefined && doc.header.md?.at !== undefined) result.at = doc.header.md.at;
      await run(doc);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
      result.complete = false;
      applier.fail(part, err);
    }
  }
  return result;
}
