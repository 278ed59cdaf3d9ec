import type { Entry } from '../core/model/types.js';
import { knownHashes, parseLength, type HashValue } from '../core/hash.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';

/**
 * What the Destination should do with one resource.
 * @see Z39.99 §5.2 (baseline, incremental, audit)
 */
export type PlanAction = 'create' | 'update' | 'delete' | 'unchanged';

/** What the Source says about a resource, read from an entry's `loc`, `lastmod` and `rs:md`. */
export interface SourceFacts {
  url: string;
  length?: number;
  /** Declared hashes of known algorithms (md5, sha-1, sha-256). */
  hashes: HashValue[];
  /** `lastmod` in ms since the epoch. */
  lastmod?: number;
}

/** What the Destination holds for a resource: from the state store, or measured from the local file. */
export interface LocalFacts {
  length: number;
  hashes: Record<string, string>;
  /** The `lastmod` recorded (as written) or the file's mtime, in ms. */
  lastmod?: number;
}

/** The decision for one resource with its reason. */
export interface PlanDecision {
  action: PlanAction;
  /**
   * Why: 'missing' (no local copy), 'hash' / 'length' (differs), 'lastmod' (the Source's is newer),
   * 'unverifiable' (the Source gives neither hash nor length nor lastmod: fetch conditionally),
   * 'same' (matches), 'gone' (not on offer any more).
   */
  reason: 'missing' | 'hash' | 'length' | 'lastmod' | 'unverifiable' | 'same' | 'gone';
}

/** Reads the facts of a Resource List / Change List entry. */
export function sourceFacts(entry: Entry): SourceFacts {
  // base64 digests (tolerated by lenient reading) are compared as the bytes they stand for
  const facts: SourceFacts = { url: entry.loc, hashes: knownHashes(entry.md?.hash) };
  const length = parseLength(entry.md?.length);
  if (length !== undefined) facts.length = length;
  if (entry.lastmod !== undefined) {
    const t = parseW3CDatetime(entry.lastmod, true);
    if (t !== undefined) facts.lastmod = t.ms;
  }
  return facts;
}

/**
 * Compares one resource as the Source describes it with the local copy. Hashes decide when both sides
 * have one of the same algorithm; then length; then `lastmod`. A Source that gives none of them cannot be
 * compared: the resource is planned as an update to be fetched conditionally.
 * @example decide({ url, hashes: [{ algorithm: 'md5', digest: 'ab…' }] }, undefined) // { action: 'create', reason: 'missing' }
 */
export function decide(source: SourceFacts, local: LocalFacts | undefined): PlanDecision {
  if (local === undefined) return { action: 'create', reason: 'missing' };
  if (source.length !== undefined && source.length !== local.length) return { action: 'update', reason: 'length' };
  let compared = source.length !== undefined;
  for (const h of source.hashes) {
    const mine = local.hashes[h.algorithm];
    if (mine === undefined) continue;
    if (mine !== h.digest.toLowerCase()) return { action: 'update', reason: 'hash' };
    compared = true;
  }
  if (source.hashes.some((h) => local.hashes[h.algorithm] !== undefined)) return { action: 'unchanged', reason: 'same' };
  if (source.lastmod !== undefined && local.lastmod !== undefined) {
    return source.lastmod > local.lastmod ? { action: 'update', reason: 'lastmod' } : { action: 'unchanged', reason: 'same' };
  }
  return compared ? { action: 'unchanged', reason: 'same' } : { action: 'update', reason: 'unverifiable' };
}

/** The change time of a Change List entry: `rs:md datetime` (1.1) or else `lastmod` (1.0), in ms. @see Z39.99 §12.1 */
export function changeTime(entry: Entry): number | undefined {
  const v = entry.md?.datetime ?? entry.lastmod;
  return v === undefined ? undefined : parseW3CDatetime(v, true)?.ms;
}

/**
 * Orders the changes of a Change List: forward chronological order is required (§12.1) but a list in reverse
 * or mixed order is tolerated: it is sorted (stably) and `sorted` says so. Entries without a readable change
 * time keep their place relative to their neighbours' order in the document.
 */
export function orderChanges(entries: Entry[]): { entries: Entry[]; sorted: boolean } {
  let ordered = true;
  let prev = -Infinity;
  const times = entries.map((e) => changeTime(e));
  for (const t of times) {
    if (t === undefined) continue;
    if (t < prev) {
      ordered = false;
      break;
    }
    prev = t;
  }
  if (ordered) return { entries, sorted: false };
  const idx = entries.map((_, i) => i);
  idx.sort((a, b) => (times[a] ?? -Infinity) - (times[b] ?? -Infinity) || a - b);
  return { entries: idx.map((i) => entries[i]!), sorted: true };
}

/**
 * Keeps only the last change of each resource (the later change wins), in order of those last changes.
 * @see Z39.99 §12.1 ("If a resource underwent multiple changes … it will be listed multiple times")
 */
export function lastChangePerResource<T extends { loc: string }>(changes: Iterable<T>): T[] {
  const m = new Map<string, T>();
  for (const c of changes) {
    m.delete(c.loc);
    m.set(c.loc, c);
  }
  return [...m.values()];
}
