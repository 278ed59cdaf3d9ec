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
 * @see Z39.99 §5.1, §6, §8–13, Appendix A; ResourceSync Archives
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { copyFile, rename } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { HashAlgorithm } from '../core/constants.js';
import { isResourceSyncError, ResourceSyncError } from '../core/errors.js';
import type { DocumentHeader, Entry, Ln } from '../core/model/types.js';
import { writeDocument } from '../core/xml/write-document.js';
import { writeDocumentSet } from '../core/xml/write-document-set.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import { HTML_LINK_MAX_BYTES, HTML_LINK_MEDIA_TYPE, withResourceSyncLink } from '../core/html-discovery.js';
import { fileSink, writeFileAtomic } from '../node/file-sink.js';
import { inventory, type Hashes } from '../node/inventory.js';
import {
  atMd,
  capabilityEntry,
  changeEntry,
  fromMd,
  header,
  intervalEntry,
  listedEntry,
  packageEntry,
  resourceEntry,
  snapshotEntry,
} from './documents.js';
import { SnapshotStore, type ChangePeriod, type ChangeRecord, type DumpRecord, type StoredResource } from './snapshot-store.js';
import { mediaType } from '../core/media-type.js';
import { DOCUMENTS_PREFIX, isValidSetName, normalizeBaseUrl, setBaseUrl } from './url-path.js';
import { writeZipPackage, type PackageItem } from './zip-package.js';
import { channelEntries, channelTopics, changeNotifications, documentDigests, frameworkChanges, frameworkDiff, type SetNotifications } from './notifications.js';

export type { HashAlgorithm };

/** Progress of a publication. */
export interface PublishProgress {
  set: string;
  phase: 'scan' | 'documents' | 'dumps';
  /** Files inventoried so far in this set. */
  files: number;
  bytes: number;
}

/** Options of `publish`. */
export interface PublishOptions {
  /** The sets of resources: one Capability List each. Names are URL segments (`[A-Za-z0-9_-][A-Za-z0-9._-]*`). */
  sets: Array<{ name: string; dir: string; describedBy?: string }>;
  /** URL of a document describing the Source: the Source Description's `rel="describedby"` link (§8). */
  describedBy?: string;
  /** Where `outDir` is served, e.g. `https://example.com/` (a trailing `/` is added). */
  baseUrl: string;
  /** The publish folder. */
  outDir: string;
  /** State folder; the store of set `s` is `<stateDir>/<s>/source.sqlite`. Default `<dir>/.resourcesync/source.sqlite`. */
  stateDir?: string;
  /** Fixity algorithms; default `['md5']`. */
  hashes?: HashAlgorithm[];
  /** Entries per Resource List document before a Resource List Index is written; default 50,000. */
  maxEntries?: number;
  /** Bytes per Resource List document; default 50 MB. */
  maxBytes?: number;
  /** When the open Change List is closed. Default: 50,000 entries, no period. */
  changeList?: { maxEntries?: number; periodMs?: number };
  /** Write a Resource Dump and a Change Dump; packages split at `maxPackageBytes` (default 100 MiB). */
  dumps?: boolean | { maxPackageBytes?: number };
  /**
   * Write every document of the sets gzipped, as `<name>.xml.gz`, and link to those names everywhere (Capability
   * Lists, indexes, `up`/`index`/`archives`/`contents` links, robots.txt, the Source Description). The Source
   * Description itself stays plain XML at the well-known URI. Default false.
   * @see sitemaps.org protocol (a Sitemap or Sitemap index may be gzipped); Z39.99 §7 (the Sitemap formats)
   */
  gzip?: boolean;
  /**
   * Publish every HTML resource (`text/html`, at most 1 MiB) with `<link rel="resourcesync" href="<Capability
   * List>">` inserted in its `<head>`, as a server that inserts it serves it (`createSourceCore`'s
   * `htmlDiscoveryLink`): the listed length and hashes, and the bitstreams in dumps, are those of the served
   * bytes. HTML that already has such a link, or no `<head>`, is published as stored. Default false.
   * @see Z39.99 §6.3.3
   */
  htmlDiscoveryLink?: boolean;
  /**
   * How many of each archived item are kept: closed Change Lists (with their Change Dump packages),
   * Resource List generations and Resource Dumps. Default: every closed Change List, 5 Resource Lists
   * and 5 Resource Dumps.
   */
  retention?: number;
  now?: () => number;
  signal?: AbortSignal;
  onProgress?: (p: PublishProgress) => void;
  /**
   * Push: advertise a change and a framework notification channel per set with this hub in the Capability
   * Lists, and return each publication's notifications in `PublishResult.notifications`.
   * @see Change Notification §4, Framework Notification §5
   */
  notifications?: { hub: string };
  /**
   * Files still being written (absolute paths under a set's folder), e.g. `SourceWatcher.unsettled`: each keeps
   * its previous state in this publication (a new one is left out), so that no half-written content is listed.
   */
  hold?: (file: string) => boolean;
}

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
}

const pad = (n: number): string => String(n).padStart(5, '0');
const ts = formatW3CDatetime;
const DEFAULT_PACKAGE_BYTES = 100 * 1024 * 1024;
/** Resource Lists and Resource Dumps kept for the archives when `retention` is not set. */
const DEFAULT_SNAPSHOT_RETENTION = 5;

/** One generation of the Resource List (a snapshot that changed). */
interface RlGeneration {
  n: number;
  at: number;
  completed: number;
  /** The list (or index) first, then its parts. */
  files: string[];
}

async function copyAtomic(from: string, to: string): Promise<void> {
  const tmp = `${to}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await copyFile(from, tmp);
    await rename(tmp, to);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

interface Context {
  baseUrl: string;
  sdUrl: string;
  outDir: string;
  setCount: number;
  hashes: HashAlgorithm[];
  maxEntries: number;
  maxBytes: number;
  changeList: { maxEntries?: number; periodMs?: number };
  dumps: { maxPackageBytes: number } | undefined;
  gzip: boolean;
  htmlDiscoveryLink: boolean;
  /** Extension of the document names: `.xml`, or `.xml.gz` with `gzip`. */
  x: string;
  retention: number | undefined;
  now: () => number;
  signal: AbortSignal | undefined;
  onProgress: ((p: PublishProgress) => void) | undefined;
  exclude: string[];
  stateDir: string | undefined;
  notifications?: { hub: string } | undefined;
  hold: ((file: string) => boolean) | undefined;
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
}

function invalid(message: string, data: Record<string, unknown>): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_ARGUMENT', message, { data });
}

/**
 * Scans each set, records the changes since the previous call in its snapshot store, and (re)writes the
 * document tree of the Source into `outDir`.
 * @example
 * const r = await publish({ sets: [{ name: 'data', dir: '/srv/data' }], baseUrl: 'https://example.com/', outDir: '/var/www' });
 * console.log(r.sourceDescription, r.changes);
 */
export async function publish(options: PublishOptions): Promise<PublishResult> {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  if (baseUrl === undefined) throw invalid(`Base URL '${options.baseUrl}' is not an absolute http(s) URL without query or fragment.`, { baseUrl: options.baseUrl });
  if (options.sets.length === 0) throw invalid('Option sets is empty: give at least one directory.', {});
  const names = new Set<string>();
  for (const s of options.sets) {
    if (!isValidSetName(s.name)) throw invalid(`Set name '${s.name}' is not a valid URL segment.`, { name: s.name });
    if (names.has(s.name)) throw invalid(`Set name '${s.name}' is used twice.`, { name: s.name });
    names.add(s.name);
    let isDir = false;
    try {
      isDir = statSync(s.dir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) throw new ResourceSyncError('RS_IO', `Directory '${s.dir}' of set '${s.name}' does not exist.`, { data: { path: s.dir } });
  }
  const positive = (v: number | undefined, name: string, def: number): number => {
    if (v === undefined) return def;
    if (!Number.isSafeInteger(v) || v < 1) throw invalid(`Option ${name} '${v}' is not a positive integer.`, { [name]: v });
    return v;
  };
  const outDir = resolve(options.outDir);
  const dumpsOpt = options.dumps;
  const ctx: Context = {
    baseUrl,
    sdUrl: `${baseUrl}.well-known/resourcesync`,
    outDir,
    setCount: options.sets.length,
    hashes: [...(options.hashes ?? ['md5'])],
    maxEntries: positive(options.maxEntries, 'maxEntries', 50_000),
    maxBytes: positive(options.maxBytes, 'maxBytes', 50 * 1024 * 1024),
    changeList: { ...options.changeList },
    dumps:
      dumpsOpt === undefined || dumpsOpt === false
        ? undefined
        : { maxPackageBytes: positive(dumpsOpt === true ? undefined : dumpsOpt.maxPackageBytes, 'maxPackageBytes', DEFAULT_PACKAGE_BYTES) },
    gzip: options.gzip === true,
    htmlDiscoveryLink: options.htmlDiscoveryLink === true,
    x: options.gzip === true ? '.xml.gz' : '.xml',
    retention: options.retention === undefined ? undefined : positive(options.retention, 'retention', 1),
    now: options.now ?? Date.now,
    signal: options.signal,
    onProgress: options.onProgress,
    exclude: [outDir, join(outDir, 'robots.txt'), ...(options.stateDir === undefined ? [] : [resolve(options.stateDir)])],
    stateDir: options.stateDir === undefined ? undefined : resolve(options.stateDir),
    notifications: options.notifications,
    hold: options.hold,
  };
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
    header('urlset', { capability: 'description' }, undefined, undefined, describedBy(options.describedBy)),
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
    ...(ctx.notifications ? { notifications: results.flatMap((r) => (r.notifications ? [r.notifications] : [])) } : {}),
  };
}

function describedBy(href: string | undefined): Ln[] {
  return href === undefined ? [] : [{ rel: 'describedby', href }];
}

function sum(rs: SetResult[], k: 'created' | 'updated' | 'deleted' | 'resources'): number {
  return rs.reduce((a, r) => a + r[k], 0);
}

async function writeDoc(file: string, h: DocumentHeader, entries: Iterable<Entry> | AsyncIterable<Entry>, gzip = false): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  await writeFileAtomic(file, writeDocument(h, entries, { gzip }));
}

/** The top-level `archives` link of a document whose archive exists. @see ResourceSync Archives §2.2 */
function archivesLn(href: string | undefined): Ln[] {
  return href === undefined ? [] : [{ rel: 'archives', href }];
}

async function docBytes(h: DocumentHeader, entries: Iterable<Entry>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of writeDocument(h, entries)) chunks.push(c);
  return Buffer.concat(chunks);
}

function* map<A, B>(it: Iterable<A>, f: (a: A) => B): Generator<B> {
  for (const a of it) yield f(a);
}

/** The store file of a set. */
export function storeFile(set: { name: string; dir: string }, stateDir?: string): string {
  return stateDir === undefined ? join(set.dir, DOCUMENTS_PREFIX, 'source.sqlite') : join(stateDir, set.name, 'source.sqlite');
}

/** Publications in progress, by store file: overlapping calls for the same set run one after the other. */
const running = new Map<string, Promise<unknown>>();

async function publishSet(ctx: Context, set: { name: string; dir: string; describedBy?: string }): Promise<SetResult> {
  const key = storeFile(set, ctx.stateDir);
  const before = running.get(key) ?? Promise.resolve();
  const mine = before.then(
    () => publishSetNow(ctx, set),
    () => publishSetNow(ctx, set),
  );
  const settled = mine.catch(() => undefined);
  running.set(key, settled);
  try {
    return await mine;
  } finally {
    if (running.get(key) === settled) running.delete(key);
  }
}

async function publishSetNow(ctx: Context, set: { name: string; dir: string; describedBy?: string }): Promise<SetResult> {
  const docDir = join(ctx.outDir, DOCUMENTS_PREFIX, set.name);
  const docUrl = `${ctx.baseUrl}${DOCUMENTS_PREFIX}/${set.name}/`;
  const u = (name: string): string => docUrl + name;
  const f = (name: string): string => join(docDir, name);
  const x = ctx.x;
  const capUrl = u(`capabilitylist${x}`);
  const resBase = setBaseUrl(ctx.baseUrl, set.name, ctx.setCount);
  const rewrite = ctx.htmlDiscoveryLink ? htmlRewrite(capUrl) : undefined;
  const file = storeFile(set, ctx.stateDir);
  const bitDir = join(dirname(file), 'source-bitstreams');
  mkdirSync(docDir, { recursive: true });
  const store = SnapshotStore.open(file);
  const documents: string[] = [];
  const progress = (phase: PublishProgress['phase'], files = 0, bytes = 0): void => ctx.onProgress?.({ set: set.name, phase, files, bytes });
  try {
    const config = JSON.stringify({ v: 1, resBase, docUrl, maxEntries: ctx.maxEntries, maxBytes: ctx.maxBytes, hashes: ctx.hashes, dumps: ctx.dumps, gzip: ctx.gzip, html: ctx.htmlDiscoveryLink });
    const fresh = store.getMeta('published_config') !== config || !existsSync(f(`capabilitylist${x}`));

    const docsBefore = ctx.notifications ? documentDigests(docDir, x) : undefined;
    // 1. Scan and record the changes (§12.1)
    const keep = ctx.dumps !== undefined;
    if (keep) mkdirSync(bitDir, { recursive: true });
    const onChange = keep
      ? (c: ChangeRecord): void => {
          if (c.change === 'deleted') return;
          try {
            copyFileSync(join(set.dir, ...c.path.split('/')), join(bitDir, String(c.seq)));
          } catch {
            // the file went away again: its later deletion is recorded at the next rebuild
          }
        }
      : undefined;
    // Push: the changes of this run go out as Change Notifications (Change Notification §3)
    const recorded: ChangeRecord[] | undefined = ctx.notifications ? [] : undefined;
    const onChangeAll =
      recorded === undefined
        ? onChange
        : (c: ChangeRecord): void => {
            recorded.push(c);
            onChange?.(c);
          };
    const cursor = store.lookup();
    let r;
    try {
      const entries = inventory(set.dir, {
        hashes: ctx.hashes,
        previous: cursor.get,
        exclude: ctx.exclude,
        ...(ctx.hold !== undefined ? { hold: (rel: string) => ctx.hold!(join(set.dir, ...rel.split('/'))) } : {}),
        ...(rewrite !== undefined ? { rewrite, rewriteLimit: HTML_LINK_MAX_BYTES } : {}),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
        onProgress: (p) => progress('scan', p.files, p.bytes),
      });
      r = await store.rebuild(entries, {
        now: ctx.now,
        ...ctx.changeList,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
        ...(onChangeAll ? { onChange: onChangeAll } : {}),
      });
    } finally {
      cursor.close();
    }
    const completed = ctx.now();
    const changed = r.baseline || r.created + r.updated + r.deleted > 0;
    progress('documents');

    // 2. Resource List or Resource List Index (§10), one generation per snapshot that changed, kept for the
    //    Resource List Archive. `resourcelist.xml` is a copy of the latest generation's list (or index).
    const rlUrl = u(`resourcelist${x}`);
    const rlArchiveUrl = u(`resourcelist-archive${x}`);
    let generations = JSON.parse(store.getMeta('rl_generations') ?? '[]') as RlGeneration[];
    if (fresh || changed || generations.length === 0 || !existsSync(f(`resourcelist${x}`))) {
      const n = (generations[generations.length - 1]?.n ?? 0) + 1;
      const h = header('urlset', atMd('resourcelist', r.at, completed), capUrl, undefined, archivesLn(rlArchiveUrl));
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
          partEntry: () => ({ md: { at: ts(r.at), completed: ts(completed) } }),
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        },
      );
      await copyAtomic(f(`resourcelist-${n}${x}`), f(`resourcelist${x}`));
      const files = [`resourcelist-${n}${x}`, ...(res.indexed ? res.parts.map((p) => p.url.slice(docUrl.length)) : [])];
      generations.push({ n, at: r.at, completed, files });
      const keep = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
      for (const g of generations.slice(0, Math.max(0, generations.length - keep))) for (const name of g.files) rmSync(f(name), { force: true });
      generations = generations.slice(-keep);
      store.setMeta('rl_generations', JSON.stringify(generations));
    }
    await writeDoc(
      f(`resourcelist-archive${x}`),
      header('urlset', { capability: 'resourcelist-archive' }, capUrl),
      generations.map((g) => snapshotEntry(u(g.files[0]!), g.at, g.completed)),
      ctx.gzip,
    );
    documents.push(rlUrl, rlArchiveUrl, ...generations.flatMap((g) => g.files.map(u)));

    // 3. Change Lists (§12.1), Change List Index (§12.2), Change List Archive; retention
    let dropped: ChangePeriod[] = [];
    if (ctx.retention !== undefined) dropped = store.prunePeriods(ctx.retention);
    for (const p of dropped) {
      for (const name of [`changelist-${pad(p.id)}`, `changedump-${pad(p.id)}`, `changedump-${pad(p.id)}-manifest`]) rmSync(f(name + x), { force: true });
      rmSync(f(`changedump-${pad(p.id)}.zip`), { force: true });
    }
    const periods = store.periods();
    const closed = periods.filter((p) => p.until !== undefined);
    const open = periods.find((p) => p.until === undefined)!;
    const indexUrl = closed.length > 0 ? u(`changelist-index${x}`) : undefined;
    const clArchiveLn = archivesLn(closed.length > 0 ? u(`changelist-archive${x}`) : undefined);
    for (const p of closed) {
      const name = `changelist-${pad(p.id)}${x}`;
      if (fresh || !existsSync(f(name))) {
        await writeDoc(
          f(name),
          header('urlset', fromMd('changelist', p.from, p.until), capUrl, indexUrl, clArchiveLn),
          map(store.changes(p.id), (c) => changeEntry(resBase, c)),
          ctx.gzip,
        );
      }
      documents.push(u(name));
    }
    // The open Change List and the index change only with the changes: a quiet run rewrites neither.
    const listsChanged = fresh || changed || r.closed.length > 0 || dropped.length > 0 || !existsSync(f(`changelist${x}`));
    if (listsChanged) {
      await writeDoc(
        f(`changelist${x}`),
        header('urlset', fromMd('changelist', open.from), capUrl, indexUrl, clArchiveLn),
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
        header('sitemapindex', fromMd('changelist', first.from), capUrl, undefined, clArchiveLn),
        [...closed.map((p) => intervalEntry(u(`changelist-${pad(p.id)}${x}`), p.from, p.until)), intervalEntry(u(`changelist${x}`), open.from)],
        ctx.gzip,
      );
      await writeDoc(
        f(`changelist-archive${x}`),
        header('urlset', { capability: 'changelist-archive' }, capUrl),
        closed.map((p) => intervalEntry(u(`changelist-${pad(p.id)}${x}`), p.from, p.until)),
        ctx.gzip,
      );
      documents.push(u(`changelist-index${x}`), u(`changelist-archive${x}`));
    } else {
      rmSync(f(`changelist-index${x}`), { force: true });
      rmSync(f(`changelist-archive${x}`), { force: true });
    }

    // 4. Dumps (§11, §13)
    //    The Capability List names the core capabilities, then the archives (Archives §2.1, Example 2.1).
    const caps: Entry[] = [capabilityEntry(rlUrl, 'resourcelist')];
    const archives: Entry[] = [capabilityEntry(rlArchiveUrl, 'resourcelist-archive')];
    if (ctx.dumps !== undefined) {
      progress('dumps');
      const rd = await resourceDump(ctx, store, set, { docUrl, capUrl, resBase, rewrite, at: r.at, completed, rebuild: fresh || changed });
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
    if (ctx.notifications) caps.push(...channelEntries(docUrl, ctx.notifications.hub));

    // 5. Capability List (§9)
    await writeDoc(
      f(`capabilitylist${x}`),
      header('urlset', { capability: 'capabilitylist' }, ctx.sdUrl, undefined, describedBy(set.describedBy)),
      [...caps, ...archives],
      ctx.gzip,
    );
    documents.push(capUrl);
    store.setMeta('published_config', config);
    let notifications: SetNotifications | undefined;
    if (ctx.notifications && recorded) {
      // Windows are contiguous: each starts where the previous one announced ended (kept in the store).
      const last = store.getMeta('notified_until');
      // every capability document this run created or changed (Framework Notification §3)
      const framework = frameworkDiff(docsBefore!, documentDigests(docDir, x), docUrl, x);
      const from = last === undefined ? r.at : Number(last);
      if (last === undefined || recorded.length > 0) store.setMeta('notified_until', String(r.at));
      const topics = channelTopics(docUrl);
      notifications = {
        set: set.name,
        capabilityList: capUrl,
        hub: ctx.notifications.hub,
        changeTopic: topics.change,
        frameworkTopic: topics.framework,
        change: recorded.length > 0 ? changeNotifications(resBase, capUrl, from, r.at, recorded) : [],
        framework: frameworkChanges(capUrl, framework),
        frameworkChanges: framework,
      };
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
    };
  } finally {
    store.close();
  }
}

/** For a resource path, the function from its stored to its published bytes, or undefined. */
type Rewrite = (path: string) => ((stored: Buffer) => Uint8Array) | undefined;

/**
 * The HTML discovery link of a set: HTML resources up to {@link HTML_LINK_MAX_BYTES} are published with
 * `<link rel="resourcesync">` to the Capability List. @see Z39.99 §6.3.3
 */
function htmlRewrite(capUrl: string): Rewrite {
  const add = (stored: Buffer): Uint8Array => withResourceSyncLink(stored, capUrl);
  return (path) => (mediaType(path) === HTML_LINK_MEDIA_TYPE ? add : undefined);
}

interface DumpFiles {
  doc: string;
  zips: string[];
  manifests: string[];
}

/** Resource Dump (§11.1) with its packages and manifests (§11.2), and the Resource Dump Archive. */
async function resourceDump(
  ctx: Context,
  store: SnapshotStore,
  set: { name: string; dir: string },
  o: { docUrl: string; capUrl: string; resBase: string; rewrite: Rewrite | undefined; at: number; completed: number; rebuild: boolean },
): Promise<{ documents: string[]; available: boolean }> {
  const u = (name: string): string => o.docUrl + name;
  const f = (name: string): string => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name);
  const x = ctx.x;
  const archiveLn = archivesLn(u(`resourcedump-archive${x}`));
  let dumps = store.dumps('resourcedump');
  if (o.rebuild || dumps.length === 0 || store.getMeta('rd_stale') === '1' || !existsSync(f(`resourcedump${x}`))) {
    const n = Number(store.getMeta('rd_seq') ?? '0') + 1;
    store.setMeta('rd_seq', String(n));
    const prefix = `resourcedump-${n}`;
    const files: DumpFiles = { doc: `${prefix}${x}`, zips: [], manifests: [] };
    const entries: Entry[] = [];
    let batch: StoredResource[] = [];
    let bytes = 0;
    const flush = async (): Promise<void> => {
      const k = files.zips.length + 1;
      const zipName = `${prefix}-part${k}.zip`;
      const manName = `${prefix}-part${k}-manifest${x}`;
      const start = ctx.now();
      const manifest = await docBytes(
        header('urlset', atMd('resourcedump-manifest', o.at, o.completed), o.capUrl),
        batch.map((res) => resourceEntry(o.resBase, res, `/resources/${res.path}`)),
      );
      const items: PackageItem[] = batch.map((res) => {
        const rw = o.rewrite?.(res.path);
        return {
          zipPath: `resources/${res.path}`,
          file: join(set.dir, ...res.path.split('/')),
          size: res.size,
          mtimeMs: res.mtimeMs,
          ...(res.hashes.md5 !== undefined ? { md5: res.hashes.md5 } : {}),
          ...(rw !== undefined ? { rewrite: rw } : {}),
        };
      });
      const pkg = await writeZipPackage(f(zipName), manifest, items, { now: ctx.now, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      await writeFileAtomic(f(manName), [ctx.gzip ? gzipSync(manifest) : manifest]);
      entries.push(packageEntry(u(zipName), pkg, { at: start, completed: ctx.now() }, u(manName)));
      files.zips.push(zipName);
      files.manifests.push(manName);
      batch = [];
      bytes = 0;
    };
    const maxPkg = ctx.dumps!.maxPackageBytes;
    const perPackage = Math.min(ctx.maxEntries, 50_000);
    // Streams the snapshot: nothing writes to the store until the loop ends.
    try {
      for (const res of store.resources()) {
        if (batch.length > 0 && (bytes + res.size > maxPkg || batch.length >= perPackage)) {
          await flush();
        }
        batch.push(res);
        bytes += res.size;
      }
      if (batch.length > 0) await flush();
    } catch (err) {
      // A file changed or went away since the scan: drop this dump, keep the previous one, retry next run.
      const gone = (err as { code?: string; cause?: { code?: string } }).cause?.code === 'ENOENT';
      if (!isResourceSyncError(err, 'RS_HASH_MISMATCH') && !(isResourceSyncError(err, 'RS_ZIP') && gone)) throw err;
      for (const name of [...files.zips, ...files.manifests]) rmSync(f(name), { force: true });
      store.setMeta('rd_stale', '1');
      return { documents: dumps.length > 0 ? dumpDocuments(dumps, u, x) : [], available: dumps.length > 0 };
    }
    const done = ctx.now();
    const h = header('urlset', atMd('resourcedump', o.at, done), o.capUrl, undefined, archiveLn);
    await writeDoc(f(files.doc), h, entries, ctx.gzip);
    await writeDoc(f(`resourcedump${x}`), h, entries, ctx.gzip);
    store.addDump({ kind: 'resourcedump', at: o.at, completed: done, data: JSON.stringify(files) });
    store.setMeta('rd_stale', '0');
    dumps = store.dumps('resourcedump');
  }
  const keepDumps = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
  if (dumps.length > keepDumps) {
    for (const d of dumps.slice(0, dumps.length - keepDumps)) {
      const files = JSON.parse(d.data) as DumpFiles;
      for (const name of [files.doc, ...files.zips, ...files.manifests]) rmSync(f(name), { force: true });
      store.removeDump(d.id);
    }
    dumps = store.dumps('resourcedump');
  }
  await writeDoc(
    f(`resourcedump-archive${x}`),
    header('urlset', { capability: 'resourcedump-archive' }, o.capUrl),
    dumps.map((d) => {
      const e = snapshotEntry(u((JSON.parse(d.data) as DumpFiles).doc), d.at!, d.completed);
      if (d.completed !== undefined) e.lastmod = ts(d.completed);
      return e;
    }),
    ctx.gzip,
  );
  return { documents: dumpDocuments(dumps, u, x), available: true };
}

function dumpDocuments(dumps: DumpRecord[], u: (name: string) => string, x: string): string[] {
  const documents = [u(`resourcedump${x}`), u(`resourcedump-archive${x}`)];
  for (const d of dumps) {
    const files = JSON.parse(d.data) as DumpFiles;
    documents.push(...[files.doc, ...files.zips, ...files.manifests].map(u));
  }
  return documents;
}

interface ChangePackage {
  zip: string;
  manifest: string;
  length: number;
  md5: string;
}

/**
 * Change Dump (§13.1): one package per closed Change List, each with a Change Dump Manifest (§13.2).
 * `changedump.xml` lists every kept package; each package also has a Change Dump of its own,
 * `changedump-NNNNN.xml` (the period of its Change List), and the Change Dump Archive lists those.
 * @see ResourceSync Archives §6
 */
async function changeDump(
  ctx: Context,
  store: SnapshotStore,
  set: { name: string; dir: string },
  o: { docUrl: string; capUrl: string; resBase: string; rewrite: Rewrite | undefined; bitDir: string; closed: ChangePeriod[]; open: ChangePeriod; fresh: boolean },
): Promise<{ documents: string[]; archived: boolean }> {
  const u = (name: string): string => o.docUrl + name;
  const f = (name: string): string => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name);
  const x = ctx.x;
  const archiveUrl = u(`changedump-archive${x}`);
  const periodDoc = (p: ChangePeriod): string => `changedump-${pad(p.id)}${x}`;
  const have = new Map(store.dumps('changedump').map((d) => [d.period!, d]));
  const retained = new Set(o.closed.map((p) => p.id));
  for (const [period, d] of have) {
    if (!retained.has(period)) {
      store.removeDump(d.id);
      have.delete(period);
    }
  }
  for (const p of o.closed) {
    const old = have.get(p.id);
    if (old !== undefined && !o.fresh && existsSync(f((JSON.parse(old.data) as ChangePackage).zip)) && existsSync(f(periodDoc(p)))) continue;
    if (old !== undefined) store.removeDump(old.id);
    const changes = [...store.changes(p.id)];
    const items: PackageItem[] = [];
    const entries: Entry[] = [];
    for (const c of changes) {
      if (c.change === 'deleted') {
        entries.push(changeEntry(o.resBase, c));
        continue;
      }
      const zipPath = `changes/${c.seq}/${c.path}`;
      const copy = join(o.bitDir, String(c.seq));
      let file = copy;
      if (!existsSync(copy)) {
        // no kept bitstream (dumps enabled later): the current file serves if it still has that content
        const current = join(set.dir, ...c.path.split('/'));
        if (!sameFile(current, c)) continue;
        file = current;
      }
      const rw = o.rewrite?.(c.path);
      items.push({
        zipPath,
        file,
        size: rw !== undefined && c.size !== undefined ? c.size : statSync(file).size,
        mtimeMs: c.mtimeMs ?? c.datetime,
        ...(c.hashes?.md5 !== undefined ? { md5: c.hashes.md5 } : {}),
        ...(rw !== undefined ? { rewrite: rw } : {}),
      });
      entries.push(changeEntry(o.resBase, c, `/${zipPath}`));
    }
    const manifest = await docBytes(header('urlset', fromMd('changedump-manifest', p.from, p.until), o.capUrl), entries);
    const zip = `changedump-${pad(p.id)}.zip`;
    const man = `changedump-${pad(p.id)}-manifest${x}`;
    let pkg;
    try {
      pkg = await writeZipPackage(f(zip), manifest, items, { now: ctx.now, ...(ctx.signal ? { signal: ctx.signal } : {}) });
    } catch (err) {
      if ((err as ResourceSyncError).code !== 'RS_HASH_MISMATCH') throw err;
      continue; // a kept bitstream was altered: leave this package for a later call
    }
    await writeFileAtomic(f(man), [ctx.gzip ? gzipSync(manifest) : manifest]);
    const data: ChangePackage = { zip, manifest: man, length: pkg.length, md5: pkg.md5 };
    await writeDoc(
      f(periodDoc(p)),
      header('urlset', fromMd('changedump', p.from, p.until), o.capUrl, undefined, archivesLn(archiveUrl)),
      [packageEntry(u(zip), data, { from: p.from, until: p.until! }, u(man))],
      ctx.gzip,
    );
    const rec = store.addDump({ kind: 'changedump', from: p.from, until: p.until!, period: p.id, data: JSON.stringify(data) });
    have.set(p.id, rec);
    for (const it of items) if (it.file.startsWith(o.bitDir)) rmSync(it.file, { force: true });
  }
  const packages = o.closed.filter((p) => have.has(p.id)).map((p) => ({ p, d: JSON.parse(have.get(p.id)!.data) as ChangePackage }));
  const archived = packages.length > 0;
  const from = o.closed[0]?.from ?? o.open.from;
  await writeDoc(
    f(`changedump${x}`),
    header('urlset', fromMd('changedump', from), o.capUrl, undefined, archivesLn(archived ? archiveUrl : undefined)),
    packages.map(({ p, d }) => packageEntry(u(d.zip), d, { from: p.from, until: p.until! }, u(d.manifest))),
    ctx.gzip,
  );
  if (archived) {
    await writeDoc(
      f(`changedump-archive${x}`),
      header('urlset', { capability: 'changedump-archive' }, o.capUrl),
      packages.map(({ p }) => intervalEntry(u(periodDoc(p)), p.from, p.until)),
      ctx.gzip,
    );
  } else {
    rmSync(f(`changedump-archive${x}`), { force: true });
  }
  return {
    documents: [
      u(`changedump${x}`),
      ...(archived ? [archiveUrl] : []),
      ...packages.flatMap(({ p, d }) => [u(periodDoc(p)), u(d.zip), u(d.manifest)]),
    ],
    archived,
  };
}

function sameFile(file: string, c: { size?: number; hashes?: Hashes }): boolean {
  try {
    const st = statSync(file);
    if (st.size !== c.size) return false;
    if (c.hashes?.md5 === undefined) return true;
    // small check by content; large files are compared while zipping (the md5 of each bitstream is verified)
    return st.size > 16 * 1024 * 1024 || md5File(file) === c.hashes.md5;
  } catch {
    return false;
  }
}

function md5File(file: string): string {
  return createHash('md5').update(readFileSync(file)).digest('hex');
}
