/**
 * Mirrors the `describedby` targets of the resources a mirror holds (their metadata records, §14.5) beside the
 * mirror, in trees that no resource path can take: the first `describedby` link of the resource at `a/b.txt` lands at
 * `<dest>/.resourcesync-describedby/a/b.txt`, its second at `<dest>/.resourcesync-describedby-2/a/b.txt`, and so on
 * (a resource path never has a segment that starts with `.resourcesync`). Each target passes the authority check,
 * is fetched with the run's HTTP client (its limits and timeouts), verified against the link's `length` and `hash`
 * and renamed into place like any resource; copies whose resource or link is gone are removed.
 * @see Z39.99 §14.5 (describedby)
 */
import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isResourceSyncError, ResourceSyncError, type ErrorCode, messageOf } from '../core/errors.js';
import { knownHashes, parseLength } from '../core/hash.js';
import { hashFile } from '../node/hash-file.js';
import { FsyncEach, type Durability } from '../node/durability.js';
import { safeJoin } from '../node/safe-path.js';
import { listFiles } from './audit.js';
import { connect, type ConnectionOptions } from './connection.js';
import type { MirrorTarget } from './sync-options.js';
import { relatedLinks, type LinkRef } from './links.js';
import { runPool } from './run-pool.js';
import { openSqliteDestinationState, STATE_DIR } from './sqlite-state.js';
import { holdLease } from './lease.js';
import { writeVerified } from './verified-write.js';

/** The folder (under the destination) of the `n`-th (from 1) `describedby` link of every resource. */
export function describedByTree(n: number): string {
  return n === 1 ? `${STATE_DIR}-describedby` : `${STATE_DIR}-describedby-${n}`;
}

const TREE = /^\.resourcesync-describedby(?:-([2-9]|[1-9]\d+))?$/;

/** Options of {@link mirrorDescribedBy}: how to reach the Source (as for `sync`) and the mirror. */
export type DescribedByOptions = ConnectionOptions &
  MirrorTarget & {
    /** Makes each file durable before its rename; settled by the call. Default an fsync of each file (`FsyncEach`). */
    durability?: Durability;
  };

/** One `describedby` target that could not be mirrored. */
export interface DescribedByFailure {
  /** The target. */
  url: string;
  /** The resource it describes. */
  resource: string;
  code: ErrorCode;
  message: string;
}

/** What {@link mirrorDescribedBy} did. */
export interface DescribedByReport {
  /** Targets fetched, verified and written. */
  written: number;
  /** Targets whose local copy already matched the link's hash. */
  unchanged: number;
  /** Copies removed: their resource or link is gone. */
  removed: number;
  failed: DescribedByFailure[];
}

interface Target {
  resource: string;
  path: string;
  tree: string;
  ref: LinkRef;
}

/**
 * Mirrors the `describedby` targets of every resource in the mirror's state (see the module's layout). Takes the
 * mirror's lease for the time it runs (`RS_LOCKED` when a sync holds it).
 * @example const r = await mirrorDescribedBy({ source: 'http://127.0.0.1:8080/', dest: './mirror' }); r.written
 */
export async function mirrorDescribedBy(options: DescribedByOptions): Promise<DescribedByReport> {
  const dest = resolve(options.dest);
  const report: DescribedByReport = { written: 0, unchanged: 0, removed: 0, failed: [] };
  const store = await openSqliteDestinationState(dest);
  let lease;
  try {
    lease = await holdLease(store);
  } catch (err) {
    await store.close();
    throw err;
  }
  const connection = connect(options);
  const durability = options.durability ?? new FsyncEach();
  try {
    const targets: Target[] = [];
    for await (const r of store.records()) {
      const refs = relatedLinks({ loc: r.url, ...(r.links !== undefined ? { ln: r.links } : {}) }).describedby ?? [];
      refs.forEach((ref, i) => targets.push({ resource: r.url, path: r.path, tree: describedByTree(i + 1), ref }));
    }
    await runPool(targets, options.concurrency ?? 8, async (t) => {
      try {
        if (await fetchTarget(t, dest, connection, durability, options.signal)) report.written++;
        else report.unchanged++;
      } catch (err) {
        if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
        report.failed.push({
          url: t.ref.href,
          resource: t.resource,
          code: isResourceSyncError(err) ? err.code : 'RS_IO',
          message: messageOf(err),
        });
      }
    });
    await durability.settle();
    report.removed = await prune(dest, targets);
    return report;
  } finally {
    await connection.close();
    await lease.release();
    await store.close();
  }
}

/** Fetches one target unless its copy matches the link's hash; true when it was written. */
async function fetchTarget(
  t: Target,
  dest: string,
  c: ReturnType<typeof connect>,
  durability: Durability,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const root = join(dest, t.tree);
  const hashes = knownHashes(t.ref.hash);
  const length = parseLength(t.ref.length);
  const local = safeJoin(root, t.path);
  if (hashes.length > 0 && existsSync(local)) {
    const have = await hashFile(
      local,
      hashes.map((h) => h.algorithm),
    );
    if (
      hashes.every((h) => have.hashes[h.algorithm] === h.digest.toLowerCase()) &&
      (length === undefined || have.length === length)
    )
      return false;
  }
  c.authority.check(t.ref.href); // RS_AUTHORITY before any request
  const res = await c.http(t.ref.href, signal !== undefined ? { signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Describedby '${t.ref.href}' of '${t.resource}' answered HTTP ${res.status}.`,
      { data: { url: t.ref.href, status: res.status }, recoverable: true },
    );
  }
  await writeVerified({
    root,
    relPath: t.path,
    body: res.body,
    expected: { ...(length !== undefined ? { length } : {}), hashes },
    durability,
  });
  return true;
}

/** Removes the copies no target names any more, and each tree's temporary files; returns how many were removed. */
async function prune(dest: string, targets: readonly Target[]): Promise<number> {
  const wanted = new Set(targets.map((t) => `${t.tree}/${t.path}`));
  let removed = 0;
  for (const tree of readdirSync(dest).filter((n) => TREE.test(n))) {
    const root = join(dest, tree);
    for (const p of listFiles(root)) {
      if (wanted.has(`${tree}/${p}`)) continue;
      await rm(safeJoin(root, p), { force: true });
      removed++;
    }
    await rm(join(root, STATE_DIR), { recursive: true, force: true });
  }
  return removed;
}
