import { ResourceSyncError, isResourceSyncError, type ErrorCode, messageOf } from '../core/errors.js';
import { REL_PATCH } from '../core/constants.js';
import { knownHashes, parseLength, type HashValue } from '../core/hash.js';
import { isJsonPatchMediaType } from '../core/json-patch.js';
import type { Entry, Ln } from '../core/model/types.js';
import { safeRelativePath } from '../node/safe-path.js';
import { applyPatchLink, singleChunk } from './apply-patch.js';
import type { Authority } from '../client/authority.js';
import type { HttpGet } from '../client/http.js';
import type { Durability } from '../node/durability.js';
import { writeVerified, type WriteVerifiedOptions } from './verified-write.js';
import type { MirrorStorage } from './mirror-storage.js';

/**
 * Links to related resources (`rs:ln` of an entry): mirrors to fetch from, patches to apply, and the
 * other relations kept in the state store for the user; `fetchResource` follows them. Applying a patch
 * (JSON Patch onto the local copy) is in `apply-patch.ts`.
 * @see Z39.99 §14
 */

/** The authority check this module needs (`createAuthority` in `authority.ts` gives one). */
export type AuthorityCheck = Pick<Authority, 'allows' | 'check'>;

/** Default `pri` when absent. @see Z39.99 §7 (`pri`) */
const DEFAULT_PRI = 999_999;

/** Relation types kept for the user, not followed by the sync. @see Z39.99 §14.3, §14.5–§14.8 */
export const KEPT_RELATIONS = [
  'alternate',
  'canonical',
  'memento',
  'timegate',
  'timemap',
  'describedby',
  'describes',
  'collection',
  'via',
  'profile',
] as const;
/** A relation type kept for the user. */
export type KeptRelation = (typeof KEPT_RELATIONS)[number];

/** One kept link: its absolute target and the attributes describing the related resource. */
export interface LinkRef {
  href: string;
  type?: string;
  modified?: string;
  hash?: string;
  length?: string;
  pri?: string;
}

/** The links a state store keeps for an entry, by relation type. */
export type RelatedLinks = Partial<Record<KeptRelation, LinkRef[]>>;

function rels(ln: Ln): string[] {
  return (ln.rel ?? '').split(/\s+/).filter((r) => r !== '');
}

function hasRel(ln: Ln, rel: string): boolean {
  const want = rel.toLowerCase();
  return rels(ln).some((r) => r.toLowerCase() === want);
}

/** `pri` as a number: 1..999,999, absent or malformed = 999,999. @see Z39.99 §7 */
export function linkPriority(ln: Ln): number {
  const n = parseLength(ln.pri);
  return n === undefined || n < 1 || n > DEFAULT_PRI ? DEFAULT_PRI : n;
}

function absolute(href: string, base: string): string | undefined {
  try {
    return new URL(href, base).href;
  } catch {
    return undefined;
  }
}

/**
 * The mirror links (`rel="duplicate"`) of an entry, lowest `pri` first; equal priorities keep
 * document order. Hrefs are resolved against the entry's `loc`.
 * @example mirrorLinks(entry).map((l) => l.href)
 * @see Z39.99 §14.2
 */
export function mirrorLinks(entry: Entry): Ln[] {
  const list = (entry.ln ?? [])
    .map((ln, i) => ({ ln, i, pri: linkPriority(ln) }))
    .filter((x) => hasRel(x.ln, 'duplicate') && x.ln.href !== undefined);
  list.sort((a, b) => a.pri - b.pri || a.i - b.i);
  return list.flatMap((x) => {
    const href = absolute(x.ln.href!, entry.loc);
    return href === undefined ? [] : [{ ...x.ln, href }];
  });
}

/**
 * The patch links of an entry (`rel="http://www.openarchives.org/rs/terms/patch"`), ordered by `pri`.
 * @see Z39.99 §14.4
 */
export function patchLinks(entry: Entry): Ln[] {
  const list = (entry.ln ?? [])
    .map((ln, i) => ({ ln, i, pri: linkPriority(ln) }))
    .filter((x) => hasRel(x.ln, REL_PATCH) && x.ln.href !== undefined);
  list.sort((a, b) => a.pri - b.pri || a.i - b.i);
  return list.flatMap((x) => {
    const href = absolute(x.ln.href!, entry.loc);
    return href === undefined ? [] : [{ ...x.ln, href }];
  });
}

/**
 * The links kept in the state for the user: alternate/canonical representations, mementos,
 * TimeGates and TimeMaps, metadata (`describedby`/`describes`, `profile`), collections and `via`
 * provenance. Hrefs are made absolute against the entry's `loc`; relations not listed are dropped.
 * @example relatedLinks(entry).describedby?.[0]?.href
 * @see Z39.99 §14.3, §14.5, §14.6, §14.7, §14.8
 */
export function relatedLinks(entry: Entry): RelatedLinks {
  const out: RelatedLinks = {};
  for (const ln of entry.ln ?? []) {
    if (ln.href === undefined) continue;
    const href = absolute(ln.href, entry.loc);
    if (href === undefined) continue;
    for (const r of rels(ln)) {
      const rel = r.toLowerCase() as KeptRelation;
      if (!(KEPT_RELATIONS as readonly string[]).includes(rel)) continue;
      const ref: LinkRef = { href };
      for (const k of ['type', 'modified', 'hash', 'length', 'pri'] as const) {
        const v = ln[k];
        if (v !== undefined) ref[k] = v;
      }
      (out[rel] ??= []).push(ref);
    }
  }
  return out;
}

/** How one candidate source was tried. */
export interface FetchAttempt {
  url: string;
  kind: 'patch' | 'primary' | 'mirror';
  /** `skipped`: never requested (off-authority, unsupported scheme or media type, nothing to patch). */
  outcome: 'skipped' | 'failed' | 'ok';
  code?: ErrorCode;
  message?: string;
}

/** The outcome of `fetchResource`. */
export interface FetchResult {
  /** Absolute path written. */
  path: string;
  length: number;
  /** Digests computed while writing (md5 always, plus every algorithm the entry declares), by algorithm. */
  hashes: Record<string, string>;
  /** Where the bytes came from. */
  via: 'patch' | 'primary' | 'mirror';
  url: string;
  /** Every candidate considered, in order, including the one that succeeded. */
  attempts: FetchAttempt[];
}

/** Options of `fetchResource`. */
export interface FetchResourceOptions {
  http: HttpGet;
  authority: AuthorityCheck;
  /** The destination root (without `storage`: the mirror is this folder). */
  dest?: string;
  /** The mirror's storage (settled by the caller); `durability` is then not used. */
  storage?: MirrorStorage;
  /** Where the resource goes, relative to `dest`: its key in the storage (from the mapper). */
  relPath: string;
  /** Absolute path of the current local copy, to which patches apply (absent, and no `localKey`: no patching). */
  localCopy?: string;
  /** The key of the current copy in `storage`, to which patches apply (read there, instead of `localCopy`). */
  localKey?: string;
  /** Try mirrors before the primary `loc`. Default false: mirrors only when the primary fails. */
  preferMirrors?: boolean;
  /** Apply patch links when possible. Default true. */
  usePatches?: boolean;
  /** Modification time to set on the file (from `lastmod`). */
  mtime?: Date;
  /**
   * Makes the written file durable (passed to `writeVerified`; the caller settles it). Default: an fsync of the
   * file and its folder.
   */
  durability?: Durability;
  signal?: AbortSignal;
  /** Largest patch document and local copy read for patching, bytes. Default 16 MiB. */
  maxPatchBytes?: number;
  /** Extra request headers (for example conditional GET). */
  headers?: Record<string, string>;
}

function expectedOf(entry: Entry): { length?: number; hashes?: HashValue[] } {
  const expected: { length?: number; hashes?: HashValue[] } = {};
  const length = parseLength(entry.md?.length);
  if (length !== undefined) expected.length = length;
  const hashes = knownHashes(entry.md?.hash);
  if (hashes.length > 0) expected.hashes = hashes;
  return expected;
}

function codeOf(err: unknown): ErrorCode {
  return isResourceSyncError(err) ? err.code : 'RS_IO';
}

/** What the steps of one {@link fetchResource} share: the entry, its options, what it must match, the attempts so far. */
interface FetchRun {
  entry: Entry;
  options: FetchResourceOptions;
  expected: { length?: number; hashes?: HashValue[] };
  /** The arguments of `writeVerified` but the body. */
  target: Omit<WriteVerifiedOptions, 'body'>;
  attempts: FetchAttempt[];
}

/** The arguments of `writeVerified` but the body: where the bytes go, what they must match, the mtime and durability. */
function writeTarget(options: FetchResourceOptions, expected: FetchRun['expected']): FetchRun['target'] {
  return {
    ...(options.storage !== undefined ? { storage: options.storage } : options.dest !== undefined ? { root: options.dest } : {}),
    relPath: options.relPath,
    expected,
    ...(options.mtime === undefined ? {} : { mtime: options.mtime }),
    ...(options.durability === undefined ? {} : { durability: options.durability }),
  };
}

/**
 * True when `url` may be requested: a valid http(s) URL within the authority. Otherwise the candidate is recorded
 * in `attempts` as skipped, with why.
 */
function candidateAllowed(run: FetchRun, url: string, kind: FetchAttempt['kind']): boolean {
  const { attempts, options } = run;
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    attempts.push({
      url,
      kind,
      outcome: 'skipped',
      code: 'RS_INVALID_ARGUMENT',
      message: `URL '${url}' is not valid.`,
    });
    return false;
  }
  if (scheme !== 'http:' && scheme !== 'https:') {
    attempts.push({
      url,
      kind,
      outcome: 'skipped',
      code: 'RS_INVALID_ARGUMENT',
      message: `URL '${url}' uses an unsupported scheme.`,
    });
    return false;
  }
  try {
    if (!options.authority.allows(url))
      throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the Source's authority.`, {
        data: { url },
      });
    options.authority.check(url);
  } catch (err) {
    attempts.push({ url, kind, outcome: 'skipped', code: codeOf(err), message: messageOf(err) });
    return false;
  }
  return true;
}

/**
 * The entry's patch links tried in order (Z39.99 §14.4): only JSON Patch, only onto an existing local copy, only
 * verifiable by hash. Resolves with the first result written, undefined when no patch yields verified bytes.
 */
async function fetchByPatch(run: FetchRun): Promise<FetchResult | undefined> {
  const { entry, options, expected, attempts } = run;
  for (const ln of patchLinks(entry)) {
    const url = ln.href!;
    if (!isJsonPatchMediaType(ln.type)) {
      attempts.push({
        url,
        kind: 'patch',
        outcome: 'skipped',
        code: 'RS_PATCH',
        message: `Patch '${url}' has media type '${ln.type ?? ''}', not JSON Patch.`,
      });
      continue;
    }
    if ((options.localCopy === undefined && options.localKey === undefined) || expected.hashes === undefined) {
      attempts.push({
        url,
        kind: 'patch',
        outcome: 'skipped',
        code: 'RS_PATCH',
        message: `Patch '${url}' cannot be verified or has no local copy to apply to.`,
      });
      continue;
    }
    if (!candidateAllowed(run, url, 'patch')) continue;
    try {
      const result = await applyPatchLink(url, ln, entry, options, expected.hashes);
      const written = await writeVerified({ ...run.target, body: singleChunk(result) });
      attempts.push({ url, kind: 'patch', outcome: 'ok' });
      return { path: written.path, length: written.length, hashes: written.hashes, via: 'patch', url, attempts };
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
      attempts.push({ url, kind: 'patch', outcome: 'failed', code: codeOf(err), message: messageOf(err) });
    }
  }
  return undefined;
}

/**
 * The primary `loc` and the `duplicate` mirrors tried in order (Z39.99 §14.2; mirrors first with `preferMirrors`).
 * Resolves with the first result written, undefined when none yields verified bytes.
 */
async function fetchByLocation(run: FetchRun): Promise<FetchResult | undefined> {
  const { entry, options, attempts } = run;
  const mirrors = mirrorLinks(entry).map((ln) => ({ url: ln.href!, kind: 'mirror' as const }));
  const primary = { url: entry.loc, kind: 'primary' as const };
  const order = options.preferMirrors ? [...mirrors, primary] : [primary, ...mirrors];
  for (const { url, kind } of order) {
    if (!candidateAllowed(run, url, kind)) continue;
    try {
      const init = {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.headers ? { headers: options.headers } : {}),
      };
      const res = await options.http(url, init);
      if (res.status !== 200) {
        await res.discard();
        throw new ResourceSyncError('RS_HTTP_STATUS', `URL '${url}' answered HTTP ${res.status}.`, {
          data: { url, status: res.status },
          recoverable: true,
        });
      }
      const written = await writeVerified({ ...run.target, body: res.body });
      attempts.push({ url, kind, outcome: 'ok' });
      return { path: written.path, length: written.length, hashes: written.hashes, via: kind, url, attempts };
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
      attempts.push({ url, kind, outcome: 'failed', code: codeOf(err), message: messageOf(err) });
    }
  }
  return undefined;
}

/** The error when no candidate yielded verified bytes: the last failure's code, every attempt in `data`. */
function notObtained(entry: Entry, attempts: FetchAttempt[]): ResourceSyncError {
  const last = attempts.filter((a) => a.outcome === 'failed').at(-1) ?? attempts.at(-1);
  return new ResourceSyncError(
    last?.code ?? 'RS_NETWORK',
    `Resource '${entry.loc}' could not be obtained from ${attempts.length} candidate(s).`,
    {
      data: { url: entry.loc, attempts },
      recoverable: true,
    },
  );
}

/**
 * Obtains an entry's resource and writes it through `writeVerified` at `dest/relPath`, trying in order:
 * a JSON Patch link applied to `localCopy` (accepted only when the result matches the entry's hash and
 * length), then the primary `loc`, then the `duplicate` mirrors in `pri` order (mirrors first with
 * `preferMirrors`). Every URL must pass the authority check: an off-authority mirror or patch link is
 * skipped and reported in `attempts`, never requested. Throws a recoverable `ResourceSyncError` (the
 * last failure's code, `data.attempts`) when no candidate yields verified bytes.
 * @example
 * const r = await fetchResource(entry, { http, authority, dest, relPath: 'a/b.json', localCopy: '/mirror/a/b.json' });
 * r.via // 'patch' | 'primary' | 'mirror'
 * @see Z39.99 §14.2, §14.4
 */
export async function fetchResource(entry: Entry, options: FetchResourceOptions): Promise<FetchResult> {
  safeRelativePath(options.relPath); // refuse an unsafe path before any request
  const expected = expectedOf(entry);
  const run: FetchRun = { entry, options, expected, target: writeTarget(options, expected), attempts: [] };
  const result = (options.usePatches !== false ? await fetchByPatch(run) : undefined) ?? (await fetchByLocation(run));
  if (result !== undefined) return result;
  throw notObtained(entry, run.attempts);
}


/**
 * The applier's `fetchViaLinks` for one run: {@link fetchResource} with the run's client, authority and storage,
 * answering the length and hashes written; patches apply to the copy under `localKey`.
 */
export function linkFetcher(run: {
  http: HttpGet;
  authority: AuthorityCheck;
  storage: MirrorStorage;
  signal?: AbortSignal | undefined;
}): (
  entry: Entry,
  relPath: string,
  localKey: string | undefined,
  mtime: Date | undefined,
  how: { preferMirrors: boolean; usePatches: boolean },
) => Promise<{ length: number; hashes: Record<string, string> }> {
  return async (entry, relPath, localKey, mtime, how) => {
    const r = await fetchResource(entry, {
      http: run.http,
      authority: run.authority,
      storage: run.storage,
      relPath,
      preferMirrors: how.preferMirrors,
      usePatches: how.usePatches,
      ...(localKey !== undefined ? { localKey } : {}),
      ...(mtime !== undefined ? { mtime } : {}),
      ...(run.signal ? { signal: run.signal } : {}),
    });
    return { length: r.length, hashes: r.hashes };
  };
}
