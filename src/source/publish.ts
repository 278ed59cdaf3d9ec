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
 * for the same set run one after the other, in one process or in several sharing the set's snapshots: each
 * holds the set's `documents` lease, and its `recording` lease while it scans (see `SourceSnapshots`).
 *
 * This module writes the Source Description, robots.txt and each set's Capability List, in the order of the
 * steps; each family of documents has its own module: `publish-resource-lists.ts`, `publish-change-lists.ts`,
 * `publish-resource-dump.ts`, `publish-change-dump.ts` (the options in `publish-types.ts`, the shared parts in
 * `publish-context.ts`, `publish-set-store.ts`, `publish-files.ts`, `publish-html.ts`).
 * @see Z39.99 §5.1, §6, §8–13, Appendix A; ResourceSync Archives
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
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
import { announceChanges, changeRecorder, publishContext, setPaths, unpublishable, writeDoc, type Context, type PublishOptions, type PublishProgress, type PublishWarning, type SetPaths } from './publish-context.js';
import { htmlRewrite, type Rewrite } from './publish-html.js';
import { publishResourceLists } from './publish-resource-lists.js';
import { recordFeed } from './publish-feed.js';
import type { InventoryFeed } from './inventory-feed.js';
import { resourceDump } from './publish-resource-dump.js';
import type { RebuildOptions, RebuildResult } from './snapshot-rows.js';
import { holdingLease, type SourceSnapshots } from './source-snapshots.js';
import type { SinkResult } from './document-sink.js';
import { bitstreamDir, openSetSnapshots, setConfig, storeFile } from './publish-set-store.js';

export type { PublishOptions, PublishProgress, ResourceLinksFn } from './publish-context.js';
export type { HashAlgorithm };
export { storeFile } from './publish-set-store.js';

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
  /** With `options.sink`: what was copied to it (and brought from it first). */
  sink?: SinkResult;
  /** What the run left out, each with a code (at most 100; `warningsOmitted` counts the others). */
  warnings: PublishWarning[];
  warningsOmitted: number;
  /** Bad records of the sets given as feeds that were left out (`InventoryFeed.onInvalid: 'skip'`). */
  skipped: number;
}

interface SetResult {
  capabilityList: string;
  resourceList: string;
  documents: string[];
  created: number;
  updated: number;
  deleted: number;
  resources: number;
  skipped: number;
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
  if (options.sink === undefined) return publishAll(ctx, options, undefined);
  // a sink removes the documents a run did not write: a run of some sets would remove the others'
  if (options.only !== undefined) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'Publication into a sink takes every set: `only` cannot be given with `sink`.');
  // with a sink, the whole publication (the working copy brought up to the sink, every set, the upload) holds the
  // first set's documents lease: runs on several machines into one sink take turns, none uploads an older view
  const first = { name: options.sets[0]!.name, ...setWhere(ctx, options.sets[0]!) };
  const snapshots = await openSetSnapshots(ctx, first, storeFile(first, ctx.stateDir));
  try {
    return await holdingLease(snapshots, 'documents', () => publishAll(ctx, options, first.name), ctx.signal ? { signal: ctx.signal } : {});
  } finally {
    await snapshots.close();
  }
}

/** Where a set is: its folder, or for a feed its folder of the state folder (where its snapshots are kept). */
function setWhere(ctx: Context, set: PublishOptions['sets'][number]): { dir: string; feed?: InventoryFeed } {
  return set.feed === undefined ? { dir: resolve(set.dir) } : { dir: join(ctx.stateDir!, set.name), feed: set.feed };
}

/** Publishes every set, the Source Description and robots.txt; `held`: the set whose documents lease is held already. */
async function publishAll(ctx: Context, options: PublishOptions, held: string | undefined): Promise<PublishResult> {
  const { baseUrl, outDir } = ctx;

  mkdirSync(outDir, { recursive: true });
  // a sink (an S3 bucket) holds the documents: the publish folder goes on from what it holds
  const downloaded = options.sink === undefined ? 0 : await options.sink.prepare(outDir, ctx.signal);
  const results: SetResult[] = [];
  for (const set of options.sets) {
    if (ctx.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Publication aborted.', { cause: ctx.signal.reason });
    if (options.only !== undefined && !options.only.includes(set.name)) {
      results.push(untouchedSet(ctx, set));
      continue;
    }
    results.push(await publishSet(ctx, { name: set.name, ...setWhere(ctx, set), ...(set.describedBy !== undefined ? { describedBy: set.describedBy } : {}) }, set.name === held));
  }

  // Source Description (§8) at the well-known URI (§6.3.2), and robots.txt (§6.3.4)
  const sdFile = join(outDir, '.well-known', 'resourcesync');
  const sdBefore = ctx.notifications && existsSync(sdFile) ? readFileSync(sdFile) : undefined;
  await writeDoc(
    sdFile,
    header('source-description', {}, { links: describedBy(options.describedBy) }),
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
  const sink = options.sink === undefined ? undefined : { ...(await options.sink.commit(outDir, documentFiles(baseUrl, documents), ctx.signal)), downloaded };
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
    skipped: sum(results, 'skipped'),
    warnings: ctx.warnings,
    warningsOmitted: ctx.warningsOmitted,
    ...dueIn(results),
    ...(sink === undefined ? {} : { sink }),
    ...(ctx.notifications ? { notifications: results.flatMap((r) => (r.notifications ? [r.notifications] : [])) } : {}),
  };
}

/** A set left as it is (`PublishOptions.only`): its Capability List and Resource List are named, nothing is read. */
function untouchedSet(ctx: Context, set: { name: string }): SetResult {
  const paths = setPaths(ctx, set);
  return {
    capabilityList: paths.capUrl,
    resourceList: paths.documentUrl(`resourcelist${ctx.ext}`),
    documents: [],
    created: 0,
    updated: 0,
    deleted: 0,
    resources: 0,
    skipped: 0,
  };
}

/** The documents' files under the publish folder: their URL paths below the base URL's, decoded. */
function documentFiles(baseUrl: string, documents: readonly string[]): string[] {
  const base = new URL(baseUrl).pathname;
  return documents.filter((d) => d.startsWith(base)).map((d) => d.slice(base.length).split('/').map(decodeURIComponent).join('/'));
}

function describedBy(href: string | undefined): Ln[] {
  return href === undefined ? [] : [{ rel: 'describedby', href }];
}

async function readDigestMemo(snapshots: SourceSnapshots): Promise<DigestMemo> {
  const saved = (await snapshots.getMeta('document_digests')) ?? '[]';
  try {
    return new Map(JSON.parse(saved) as [string, DigestRecord][]);
  } catch {
    return new Map(); // unreadable: every document is read again
  }
}

function dueIn(rs: SetResult[]): { resourceListDueInMs?: number } {
  const due = rs.flatMap((r) => (r.resourceListDueInMs === undefined ? [] : [r.resourceListDueInMs]));
  return due.length === 0 ? {} : { resourceListDueInMs: Math.min(...due) };
}

function sum(rs: SetResult[], k: 'created' | 'updated' | 'deleted' | 'resources' | 'skipped'): number {
  return rs.reduce((a, r) => a + r[k], 0);
}

/**
 * Publishes one set holding its `documents` lease (unless `held`, by the caller): overlapping publications of the
 * set (in this process or any other sharing its snapshots) run one after the other.
 */
async function publishSet(ctx: Context, set: { name: string; dir: string; describedBy?: string; feed?: InventoryFeed }, held: boolean): Promise<SetResult> {
  const file = storeFile(set, ctx.stateDir);
  const snapshots = await openSetSnapshots(ctx, set, file);
  try {
    if (held) return await publishSetNow(ctx, set, snapshots, file);
    return await holdingLease(snapshots, 'documents', () => publishSetNow(ctx, set, snapshots, file), ctx.signal ? { signal: ctx.signal } : {});
  } finally {
    await snapshots.close();
  }
}

/** A set being published: its folder, its snapshots and where its documents go. */
interface SetRun {
  set: { name: string; dir: string; describedBy?: string; feed?: InventoryFeed };
  snapshots: SourceSnapshots;
  paths: SetPaths;
  /** Where the bitstreams of its changes are kept for the Change Dumps. */
  bitDir: string;
  /** Inserts the discovery link into HTML resources (`htmlDiscoveryLink`). */
  rewrite: Rewrite | undefined;
  /** Published before with other options (or never): every document is written again. */
  fresh: boolean;
  progress: (phase: PublishProgress['phase'], files?: number, bytes?: number) => void;
}

async function publishSetNow(ctx: Context, set: { name: string; dir: string; describedBy?: string; feed?: InventoryFeed }, snapshots: SourceSnapshots, file: string): Promise<SetResult> {
  const paths = setPaths(ctx, set);
  mkdirSync(paths.docDir, { recursive: true });
  const config = setConfig(ctx, set);
  const run: SetRun = {
    set,
    snapshots,
    paths,
    bitDir: bitstreamDir(file),
    rewrite: ctx.htmlDiscoveryLink ? htmlRewrite(paths.capUrl) : undefined,
    fresh: (await snapshots.getMeta('published_config')) !== config || !existsSync(paths.documentFile(`capabilitylist${ctx.ext}`)),
    progress: (phase, files = 0, bytes = 0) => ctx.onProgress?.({ set: set.name, phase, files, bytes }),
  };
  // what the documents were, to tell what this run changed (Framework Notification §3); the digests of
  // documents left as they were are remembered in the store from run to run
  const digestMemo = ctx.notifications ? await readDigestMemo(snapshots) : undefined;
  const docsBefore = digestMemo ? documentDigests(paths.docDir, ctx.ext, digestMemo) : undefined;
  // 1. Scan and record the changes (§12.1); push: the changes of this run go out as Change Notifications
  const { recording, notifications, skipped } = await recordSet(ctx, run);
  // 2.–4. Resource Lists, Change Lists, dumps
  const written = await writeSetDocuments(ctx, run, recording);
  // 5. Capability List (§9)
  await writeDoc(
    paths.documentFile(`capabilitylist${ctx.ext}`),
    header('capability-list', {}, { up: ctx.sdUrl, links: describedBy(set.describedBy) }),
    written.capabilities,
    ctx.gzip,
  );
  written.documents.push(paths.capUrl);
  await snapshots.setMeta('published_config', config);
  await snapshots.setMeta('documented_change', written.documentedUpTo);
  if (notifications) {
    // every capability document this run created or changed (Framework Notification §3)
    notifications.frameworkChanges = frameworkDiff(docsBefore!, documentDigests(paths.docDir, ctx.ext, digestMemo), paths.docUrl, ctx.ext);
    await snapshots.setMeta('document_digests', JSON.stringify([...digestMemo!]));
    notifications.framework = frameworkChanges(paths.capUrl, notifications.frameworkChanges);
  }
  return {
    capabilityList: paths.capUrl,
    resourceList: written.resourceListUrl,
    documents: written.documents,
    created: recording.created,
    updated: recording.updated,
    deleted: recording.deleted,
    resources: recording.resources,
    skipped,
    ...(notifications ? { notifications } : {}),
    ...(written.resourceListDueInMs === undefined ? {} : { resourceListDueInMs: written.resourceListDueInMs }),
  };
}

/**
 * Records the set's changes: by a scan (holding the `recording` lease, so no `recordChanges` meanwhile) when
 * asked, when fresh or before the first snapshot; otherwise the changes were recorded as they happened
 * (`recordChanges`, which may go on meanwhile) and the documents are written from the snapshots as they are.
 */
async function recordSet(ctx: Context, run: SetRun): Promise<{ recording: RebuildResult; notifications: SetNotifications | undefined; skipped: number }> {
  const { set, snapshots, paths } = run;
  const pushing = ctx.notifications ? { ...ctx, notifications: ctx.notifications } : undefined;
  if (!ctx.scan && !run.fresh && (await snapshots.snapshotAt()) !== undefined) {
    const at = await snapshots.clock(ctx.now);
    const recording: RebuildResult = { at, baseline: false, created: 0, updated: 0, deleted: 0, unchanged: 0, resources: await snapshots.count(), closed: [] };
    return { recording, notifications: pushing ? await announceChanges(pushing, snapshots, set.name, paths, at, []) : undefined, skipped: 0 };
  }
  return holdingLease(
    snapshots,
    'recording',
    async () => {
      const { onChange, recorded } = changeRecorder(ctx, set.dir, run.bitDir);
      const { recording, skipped } =
        set.feed === undefined
          ? { recording: await scanSet(ctx, run, onChange), skipped: 0 }
          : await recordFeed(ctx, { name: set.name, feed: set.feed }, snapshots, { ...(onChange ? { onChange } : {}), onProgress: (n) => run.progress('scan', n) });
      const notifications = pushing && recorded ? await announceChanges(pushing, snapshots, set.name, paths, recording.at, recorded) : undefined;
      return { recording, notifications, skipped };
    },
    ctx.signal ? { signal: ctx.signal } : {},
  );
}

/** Inventories the set's folder against its snapshot and records what changed. */
async function scanSet(ctx: Context, run: SetRun, onChange: RebuildOptions['onChange']): Promise<RebuildResult> {
  const { set, snapshots, rewrite } = run;
  const cursor = await snapshots.lookup();
  try {
    const entries = inventory(set.dir, {
      hashes: ctx.hashes,
      previous: (path) => cursor.get(path),
      exclude: ctx.exclude,
      ...(ctx.hold !== undefined ? { hold: (rel: string) => ctx.hold!(join(set.dir, ...rel.split('/'))) } : {}),
      settleMs: ctx.settleMs,
      onUnpublishable: (path) => unpublishable(ctx, set.name, path),
      ...(rewrite !== undefined ? { rewrite, rewriteLimit: HTML_LINK_MAX_BYTES } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      onProgress: (p) => run.progress('scan', p.files, p.bytes),
    });
    return await snapshots.rebuild(entries, {
      now: ctx.now,
      ...ctx.changeList,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(onChange ? { onChange } : {}),
    });
  } finally {
    await cursor.close();
  }
}

/** What {@link writeSetDocuments} wrote. */
interface SetDocuments {
  resourceListUrl: string;
  resourceListDueInMs: number | undefined;
  /** The Capability List's entries: the core capabilities, then the archives (Archives §2.1, Example 2.1). */
  capabilities: Entry[];
  documents: string[];
  /** The snapshots' `changed_at` the documents hold the changes up to. */
  documentedUpTo: string;
}

/** Writes the Resource Lists, the Change Lists and the dumps of a set from its snapshots. */
async function writeSetDocuments(ctx: Context, run: SetRun, recording: RebuildResult): Promise<SetDocuments> {
  const { set, snapshots, paths, fresh, rewrite } = run;
  const { docUrl, capUrl, resBase, documentUrl, linked } = paths;
  const ext = ctx.ext;
  // what the documents below hold at least: the changes recorded up to now
  const documentedUpTo = (await snapshots.getMeta('changed_at')) ?? '';
  const completed = ctx.now();
  // changes recorded since the documents were last written count too (see record-changes.ts)
  const changed = recording.baseline || recording.created + recording.updated + recording.deleted > 0 || (await snapshots.getMeta('documented_change')) !== documentedUpTo;
  run.progress('documents');
  // 2. Resource List or Resource List Index (§10), with its generations and archive
  const resourceLists = await publishResourceLists(ctx, snapshots, paths, { at: recording.at, completed, fresh, upTo: documentedUpTo, now: ctx.scan });
  const documents = [...resourceLists.documents];
  // 3. Change Lists (§12.1), Change List Index (§12.2), Change List Archive; retention
  const changeLists = await publishChangeLists(ctx, snapshots, paths, { fresh, changed: changed || recording.closed.length > 0, keepAfter: resourceLists.holdsUpTo });
  const { closed, open, indexUrl } = changeLists;
  documents.push(...changeLists.documents);
  const core: Entry[] = [capabilityEntry(resourceLists.url, 'resourcelist')];
  const archives: Entry[] = [capabilityEntry(resourceLists.archiveUrl, 'resourcelist-archive')];
  const changeListEntries = (): void => {
    core.push(capabilityEntry(indexUrl ?? documentUrl(`changelist${ext}`), 'changelist'));
    if (closed.length > 0) archives.push(capabilityEntry(documentUrl(`changelist-archive${ext}`), 'changelist-archive'));
  };
  // 4. Dumps (§11, §13)
  if (ctx.dumps !== undefined) {
    run.progress('dumps');
    // a Resource Dump of the same snapshot as the Resource List, made when it is
    const resourceDumps = await resourceDump(ctx, snapshots, set, { docUrl, capUrl, resBase, linked, rewrite, at: recording.at, completed, rebuild: fresh || resourceLists.written });
    documents.push(...resourceDumps.documents);
    if (resourceDumps.available) {
      core.push(capabilityEntry(documentUrl(`resourcedump${ext}`), 'resourcedump'));
      archives.push(capabilityEntry(documentUrl(`resourcedump-archive${ext}`), 'resourcedump-archive'));
    }
    changeListEntries();
    const changeDumps = await changeDump(ctx, snapshots, set, { docUrl, capUrl, resBase, linked, rewrite, bitDir: run.bitDir, closed, open, fresh });
    documents.push(...changeDumps.documents);
    core.push(capabilityEntry(documentUrl(`changedump${ext}`), 'changedump'));
    if (changeDumps.archived) archives.push(capabilityEntry(documentUrl(`changedump-archive${ext}`), 'changedump-archive'));
  } else {
    changeListEntries();
  }
  if (ctx.notifications) core.push(...channelEntries(docUrl, ctx.notifications.hub, ctx.notifications.xmpp));
  return { resourceListUrl: resourceLists.url, resourceListDueInMs: resourceLists.dueInMs, capabilities: [...core, ...archives], documents, documentedUpTo };
}
