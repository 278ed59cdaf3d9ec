/**
 * Publishes one or more directories (sets of resources) as a ResourceSync Source: a document tree on
 * disk, ready to be served as is (by `resourcesync serve` or any web server), updated from a persistent
 * snapshot store on each call.
 *
 * Layout under `outDir`, mirroring the URL paths under `baseUrl`:
 * ```
 * .well-known/resourcesync                     Source Description (§8, §6.3.2)
 * robots.txt                                   one `Sitemap:` line per Resource List (§6.3.4)
 * .resourcesync/<set>/capabilitylist.xml       Capability List (§9)
 *                     resourcelist.xml         Resource List, or Resource List Index when split (§10): a
 *                                              copy of the latest generation resourcelist-G.xml
 *                     resourcelist-G.xml, resourcelist-G-partN.xml   generation G and its parts
 *                     resourcelist-archive.xml Resource List Archive (Archives)
 *                     changelist.xml           the open Change List (§12.1)
 *                     changelist-NNNNN.xml     closed Change Lists
 *                     changelist-index.xml     Change List Index, forward order (§12.2)
 *                     changelist-archive.xml   Change List Archive (Archives)
 *                     resourcedump.xml         Resource Dump of the latest snapshot (§11.1)
 *                     resourcedump-N.xml, resourcedump-N-partK.zip, resourcedump-N-partK-manifest.xml
 *                     resourcedump-archive.xml Resource Dump Archive (Archives)
 *                     changedump.xml           Change Dump: one package per closed Change List (§13.1)
 *                     changedump-NNNNN.xml     the Change Dump of one closed Change List's package
 *                     changedump-NNNNN.zip, changedump-NNNNN-manifest.xml
 *                     changedump-archive.xml   Change Dump Archive (Archives)
 * ```
 * Every document with an archive carries `<rs:ln rel="archives">` to it (Archives §2.2). With `gzip`, every
 * name ending in `.xml` above ends in `.xml.gz` instead and the documents are gzipped.
 * Resources are at `<baseUrl><path>` with one set and at `<baseUrl><set>/<path>` with several.
 * Every document is written atomically (temporary file + rename). A call with no change on disk records
 * no change and rewrites only the small documents (stat only: no file is read again). Overlapping calls
 * for the same set in one process run one after the other; across processes, the store's lock
 * (SQLite, 5 s busy timeout) refuses a second writer with `RS_LOCKED`/`RS_IO`.
 *
 * This module writes the Source Description, robots.txt and each set's Capability List, in the order of the
 * steps; each family of documents has its own module: `publish-resource-lists.ts`, `publish-change-lists.ts`,
 * `publish-resource-dump.ts`, `publish-change-dump.ts` (the options and shared parts in `publish-context.ts`,
 * `publish-files.ts`, `publish-html.ts`).
 * @see Z39.99 §5.1, §6, §8–13, Appendix A; ResourceSync Archives
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { HashAlgorithm } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry, Ln } from '../core/model/types.js';
import { HTML_LINK_MAX_BYTES } from '../core/html-discovery.js';
import { writeFileAtomic } from '../node/file-sink.js';
import { inventory } from '../node/inventory.js';
import { capabilityEntry, header } from './documents.js';
import { channelEntries, documentDigests, frameworkChanges, frameworkDiff, type DigestMemo, type DigestRecord, type SetNotifications } from './notifications.js';
import { publishChangeLists } from './publish-change-lists.js';
import { changeDump } from './publish-change-dump.js';
import { announceChanges, changeRecorder, publishContext, setPaths, unpublishable, writeDoc, type Context, type PublishOptions, type PublishProgress, type PublishWarning } from './publish-context.js';
import { htmlRewrite } from './publish-html.js';
import { publishResourceLists } from './publish-resource-lists.js';
import { resourceDump } from './publish-resource-dump.js';
import { SnapshotStore, type RebuildResult } from './snapshot-store.js';
import { DOCUMENTS_PREFIX } from './url-path.js';

export type { PublishOptions, PublishProgress } from './publish-context.js';
export type { HashAlgorithm };

/** What `publish` did. */
export interface PublishResult {
  /** URL of the Source Description. */
  sourceDescription: string;
  /** URL of each set's Capability List, in the order of `sets`. */
  capabilityLists: string[];
  /** URL of each set's Resource List (or Resource List Index). */
  resourceLists: string[];
  /** URL paths (`new URL(u).pathname`) of every document now published, packages included. */
  documents: string[];
  changes: { created: number; updated: number; deleted: number };
  /** Resources listed, all sets together. */
  resources: number;
  /** With `options.notifications`: what to send on each set's channels, in the order of `sets`. */
  notifications?: SetNotifications[];
  /**
   * When a Resource List lacking changes was put off by `resourceListEveryMs`: in how many ms it is due (the
   * soonest of the sets). A publication without a scan then writes it, whether more changes come or not.
   */
  resourceListDueInMs?: number;
  /** What the run left out, each with a code (at most 100; `warningsOmitted` counts the others). */
  warnings: PublishWarning[];
  warningsOmitted: number;
}

interface SetResult {
  capabilityList: string;
  resourceList: string;
  documents: string[];
  created: number;
  updated: number;
  deleted: number;
  resources: number;
  notifications?: SetNotifications;
  resourceListDueInMs?: number;
}

/**
 * Scans each set, records the changes since the previous call in its snapshot store, and (re)writes the
 * document tree of the Source into `outDir`.
 * @example
 * const r = await publish({ sets: [{ name: 'data', dir: '/srv/data' }], baseUrl: 'https://example.com/', outDir: '/var/www' });
 * console.log(r.sourceDescription, r.changes);
 */
export async function publish(options: PublishOptions): Promise<PublishResult> {
  const ctx = publishContext(options);
  const { baseUrl, outDir } = ctx;

  mkdirSync(outDir, { recursive: true });
  const results: SetResult[] = [];
  for (const set of options.sets) {
    if (ctx.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Publication aborted.', { cause: ctx.signal.reason });
    results.push(await publishSet(ctx, { name: set.name, dir: resolve(set.dir), ...(set.describedBy !== undefined ? { describedBy: set.describedBy } : {}) }));
  }

  // Source Description (§8) at the well-known URI (§6.3.2), and robots.txt (§6.3.4)
  const sdFile = join(outDir, '.well-known', 'resourcesync');
  const sdBefore = ctx.notifications && existsSync(sdFile) ? readFileSync(sdFile) : undefined;
  await writeDoc(
    sdFile,
    header('source-description', {}, undefined, undefined, describedBy(options.describedBy)),
    results.map((r, i) => {
      const e = capabilityEntry(r.capabilityList, 'capabilitylist');
      const d = options.sets[i]!.describedBy;
      if (d !== undefined) e.ln = describedBy(d);
      return e;
    }),
  );
  if (ctx.notifications) {
    // a Source Description created or changed goes out on every set's framework channel (Framework Notification §2)
    const sdNow = readFileSync(sdFile);
    if (sdBefore === undefined || !sdBefore.equals(sdNow)) {
      for (const n of results.flatMap((r) => (r.notifications ? [r.notifications] : []))) {
        n.frameworkChanges.push({ loc: ctx.sdUrl, capability: 'description', change: sdBefore === undefined ? 'created' : 'updated' });
        n.framework = frameworkChanges(n.capabilityList, n.frameworkChanges);
      }
    }
  }
  const robots = `User-agent: *\nDisallow:\n\n${results.map((r) => `Sitemap: ${r.resourceList}\n`).join('')}`;
  await writeFileAtomic(join(outDir, 'robots.txt'), [Buffer.from(robots)]);

  const documents = [ctx.sdUrl, `${baseUrl}robots.txt`, ...results.flatMap((r) => r.documents)].map((u) => new URL(u).pathname);
  return {
    sourceDescription: ctx.sdUrl,
    capabilityLists: results.map((r) => r.capabilityList),
    resourceLists: results.map((r) => r.resourceList),
    documents,
    changes: {
      created: sum(results, 'created'),
      updated: sum(results, 'updated'),
      deleted: sum(results, 'deleted'),
    },
    resources: sum(results, 'resources'),
    warnings: ctx.warnings,
    warningsOmitted: ctx.warningsOmitted,
    ...dueIn(results),
    ...(ctx.notifications ? { notifications: results.flatMap((r) => (r.notifications ? [r.notifications] : [])) } : {}),
  };
}

function describedBy(href: string | undefined): Ln[] {
  return href === undefined ? [] : [{ rel: 'describedby', href }];
}

function readDigestMemo(store: SnapshotStore): DigestMemo {
  try {
    return new Map(JSON.parse(store.getMeta('document_digests') ?? '[]') as [string, DigestRecord][]);
  } catch {
    return new Map(); // unreadable: every document is read again
  }
}

function dueIn(rs: SetResult[]): { resourceListDueInMs?: number } {
  const due = rs.flatMap((r) => (r.resourceListDueInMs === undefined ? [] : [r.resourceListDueInMs]));
  return due.length === 0 ? {} : { resourceListDueInMs: Math.min(...due) };
}

function sum(rs: SetResult[], k: 'created' | 'updated' | 'deleted' | 'resources'): number {
  return rs.reduce((a, r) => a + r[k], 0);
}

/** The store file of a set. */
export function storeFile(set: { name: string; dir: string }, stateDir?: string): string {
  return stateDir === undefined ? join(set.dir, DOCUMENTS_PREFIX, 'source.sqlite') : join(stateDir, set.name, 'source.sqlite');
}

/** Where the bitstreams of a set's recorded changes are kept for its Change Dumps: beside its store. */
export function bitstreamDir(storeFile: string): string {
  return join(dirname(storeFile), 'source-bitstreams');
}

/**
 * The work under way on each set, by store file, in two queues: recording changes in the snapshot store (a scan
 * or `recordChanges`), and writing the documents. Overlapping calls for the same set wait their turn in each;
 * a publication that scans holds its documents' turn first, then the recording's, so that a recording never
 * waits for documents being written.
 */
const recordingTurns = new Map<string, Promise<unknown>>();
const documentTurns = new Map<string, Promise<unknown>>();

async function inTurn<T>(turns: Map<string, Promise<unknown>>, key: string, fn: () => Promise<T>): Promise<T> {
  const before = turns.get(key) ?? Promise.resolve();
  const mine = before.then(fn, fn);
  const settled = mine.catch(() => undefined);
  turns.set(key, settled);
  try {
    return await mine;
  } finally {
    if (turns.get(key) === settled) turns.delete(key);
  }
}

/** Runs `fn` once the recordings of the set whose store is `key` that came before (scans included) have ended. */
export function inSetLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  return inTurn(recordingTurns, key, fn);
}

function publishSet(ctx: Context, set: { name: string; dir: string; describedBy?: string }): Promise<SetResult> {
  return inTurn(documentTurns, storeFile(set, ctx.stateDir), () => publishSetNow(ctx, set));
}

/** What a set's documents depend on besides its resources: publishing with other options rewrites them all. */
export function setConfig(ctx: Context, set: { name: string }): string {
  const { docUrl, resBase } = setPaths(ctx, set);
  return JSON.stringify({ v: 1, resBase, docUrl, maxEntries: ctx.maxEntries, maxBytes: ctx.maxBytes, hashes: ctx.hashes, dumps: ctx.dumps, gzip: ctx.gzip, html: ctx.htmlDiscoveryLink });
}

async function publishSetNow(ctx: Context, set: { name: string; dir: string; describedBy?: string }): Promise<SetResult> {
  const paths = setPaths(ctx, set);
  const { docDir, docUrl, capUrl, resBase, u, f } = paths;
  const x = ctx.x;
  const rewrite = ctx.htmlDiscoveryLink ? htmlRewrite(capUrl) : undefined;
  const file = storeFile(set, ctx.stateDir);
  const bitDir = bitstreamDir(file);
  mkdirSync(docDir, { recursive: true });
  const store = SnapshotStore.open(file);
  const documents: string[] = [];
  const progress = (phase: PublishProgress['phase'], files = 0, bytes = 0): void => ctx.onProgress?.({ set: set.name, phase, files, bytes });
  try {
    const config = setConfig(ctx, set);
    const fresh = store.getMeta('published_config') !== config || !existsSync(f(`capabilitylist${x}`));

    // what the documents were, to tell what this run changed (Framework Notification §3); the digests of
    // documents left as they were are remembered in the store from run to run
    const digestMemo = ctx.notifications ? readDigestMemo(store) : undefined;
    const docsBefore = digestMemo ? documentDigests(docDir, x, digestMemo) : undefined;
    // 1. Scan and record the changes (§12.1); push: the changes of this run go out as Change Notifications
    const { onChange, recorded } = changeRecorder(ctx, set.dir, bitDir);
    let r: RebuildResult;
    let notifications: SetNotifications | undefined;
    if (ctx.scan || fresh || store.snapshotAt() === undefined) {
      // the set's recording turn: no recordChanges meanwhile
      [r, notifications] = await inSetLock(file, async () => {
        const cursor = store.lookup();
        let rebuilt: RebuildResult;
        try {
          const entries = inventory(set.dir, {
            hashes: ctx.hashes,
            previous: cursor.get,
            exclude: ctx.exclude,
            ...(ctx.hold !== undefined ? { hold: (rel: string) => ctx.hold!(join(set.dir, ...rel.split('/'))) } : {}),
            settleMs: ctx.settleMs,
            onUnpublishable: (path) => unpublishable(ctx, set.name, path),
            ...(rewrite !== undefined ? { rewrite, rewriteLimit: HTML_LINK_MAX_BYTES } : {}),
            ...(ctx.signal ? { signal: ctx.signal } : {}),
            onProgress: (p) => progress('scan', p.files, p.bytes),
          });
          rebuilt = await store.rebuild(entries, {
            now: ctx.now,
            ...ctx.changeList,
            ...(ctx.signal ? { signal: ctx.signal } : {}),
            ...(onChange ? { onChange } : {}),
          });
        } finally {
          cursor.close();
        }
        const announced = ctx.notifications && recorded ? announceChanges({ ...ctx, notifications: ctx.notifications }, store, set.name, paths, rebuilt.at, recorded) : undefined;
        return [rebuilt, announced] as const;
      });
    } else {
      // the changes were recorded as they happened (recordChanges, which may go on meanwhile): the documents are
      // written from the store as it is
      r = { at: store.clock(ctx.now), baseline: false, created: 0, updated: 0, deleted: 0, unchanged: 0, resources: store.count(), closed: [] };
      notifications = ctx.notifications ? announceChanges({ ...ctx, notifications: ctx.notifications }, store, set.name, paths, r.at, []) : undefined;
    }
    // what the documents below hold at least: the changes recorded up to now
    const documentedUpTo = store.getMeta('changed_at') ?? '';
    const completed = ctx.now();
    // changes recorded since the documents were last written count too (see record-changes.ts)
    const changed = r.baseline || r.created + r.updated + r.deleted > 0 || store.getMeta('documented_change') !== documentedUpTo;
    progress('documents');

    // 2. Resource List or Resource List Index (§10), with its generations and archive
    const rl = await publishResourceLists(ctx, store, paths, { at: r.at, completed, fresh, upTo: documentedUpTo, now: ctx.scan });
    const rlUrl = rl.url;
    const rlArchiveUrl = rl.archiveUrl;
    documents.push(...rl.documents);

    // 3. Change Lists (§12.1), Change List Index (§12.2), Change List Archive; retention
    const cl = await publishChangeLists(ctx, store, paths, { fresh, changed: changed || r.closed.length > 0, keepAfter: rl.holdsUpTo });
    const { closed, open, indexUrl } = cl;
    documents.push(...cl.documents);

    // 4. Dumps (§11, §13)
    //    The Capability List names the core capabilities, then the archives (Archives §2.1, Example 2.1).
    const caps: Entry[] = [capabilityEntry(rlUrl, 'resourcelist')];
    const archives: Entry[] = [capabilityEntry(rlArchiveUrl, 'resourcelist-archive')];
    if (ctx.dumps !== undefined) {
      progress('dumps');
      // a Resource Dump of the same snapshot as the Resource List, made when it is
      const rd = await resourceDump(ctx, store, set, { docUrl, capUrl, resBase, rewrite, at: r.at, completed, rebuild: fresh || rl.written });
      documents.push(...rd.documents);
      if (rd.available) {
        caps.push(capabilityEntry(u(`resourcedump${x}`), 'resourcedump'));
        archives.push(capabilityEntry(u(`resourcedump-archive${x}`), 'resourcedump-archive'));
      }
      caps.push(capabilityEntry(indexUrl ?? u(`changelist${x}`), 'changelist'));
      if (closed.length > 0) archives.push(capabilityEntry(u(`changelist-archive${x}`), 'changelist-archive'));
      const cd = await changeDump(ctx, store, set, { docUrl, capUrl, resBase, rewrite, bitDir, closed, open, fresh });
      documents.push(...cd.documents);
      caps.push(capabilityEntry(u(`changedump${x}`), 'changedump'));
      if (cd.archived) archives.push(capabilityEntry(u(`changedump-archive${x}`), 'changedump-archive'));
    } else {
      caps.push(capabilityEntry(indexUrl ?? u(`changelist${x}`), 'changelist'));
      if (closed.length > 0) archives.push(capabilityEntry(u(`changelist-archive${x}`), 'changelist-archive'));
    }
    if (ctx.notifications) caps.push(...channelEntries(docUrl, ctx.notifications.hub, ctx.notifications.xmpp));

    // 5. Capability List (§9)
    await writeDoc(
      f(`capabilitylist${x}`),
      header('capability-list', {}, ctx.sdUrl, undefined, describedBy(set.describedBy)),
      [...caps, ...archives],
      ctx.gzip,
    );
    documents.push(capUrl);
    store.setMeta('published_config', config);
    store.setMeta('documented_change', documentedUpTo);
    if (notifications) {
      // every capability document this run created or changed (Framework Notification §3)
      notifications.frameworkChanges = frameworkDiff(docsBefore!, documentDigests(docDir, x, digestMemo), docUrl, x);
      store.setMeta('document_digests', JSON.stringify([...digestMemo!]));
      notifications.framework = frameworkChanges(capUrl, notifications.frameworkChanges);
    }
    return {
      capabilityList: capUrl,
      resourceList: rlUrl,
      documents,
      created: r.created,
      updated: r.updated,
      deleted: r.deleted,
      resources: r.resources,
      ...(notifications ? { notifications } : {}),
      ...(rl.dueInMs === undefined ? {} : { resourceListDueInMs: rl.dueInMs }),
    };
  } finally {
    store.close();
  }
}
