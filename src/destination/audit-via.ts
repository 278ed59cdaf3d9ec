/**
 * Provenance a Destination can check: each copy in a mirror of an aggregate carries `rs:ln rel="via"` to its
 * original with the original's `hash`, `length` and `modified` as the aggregator last saw them (Z39.99 §14.8).
 * {@link auditVia} fetches every original and reports the copies whose original has moved on (other bytes, another
 * length, or gone). Nothing is changed.
 * @see Z39.99 §14.8
 */
import { createHash } from 'node:crypto';
import { ResourceSyncError } from '../core/errors.js';
import { knownHashes, nodeHashName, parseLength } from '../core/hash.js';
import { keptLinks } from './kept-links.js';
import type { LinkRef } from './links.js';
import type { DestinationState } from './state.js';

/** Options of {@link auditVia}. */
export interface ViaAuditOptions {
  /** The mirror (its state holds the kept `via` links). */
  dest: string;
  /** The mirror's state when not `<dest>/.resourcesync/state.sqlite` (the caller's, not closed here). */
  state?: DestinationState;
  /** Originals fetched at once. Default 4. */
  concurrency?: number;
  /** Per original: connect, headers and body, ms. Default 30,000. */
  timeoutMs?: number;
  /** Copies checked at most (the others are counted in `notChecked`). Default 1,000,000. */
  maxResources?: number;
  signal?: AbortSignal;
  /**
   * Origins whose originals may be fetched (`https://example.org`): a `via` link names any URL the aggregate wrote,
   * so only origins the caller names are contacted; a copy whose original is elsewhere is reported `unreachable`.
   */
  allowOrigins: readonly string[];
  /** Most bytes read of one original (beyond its `length` when the link gives one, one byte more is read). Default 1 GiB. */
  maxBytes?: number;
  /** The HTTP client. Default the global `fetch`. */
  fetch?: typeof fetch;
}

/** A copy whose original has moved on, or could not be checked. */
export interface ViaDifference {
  /** The copy's URL (at the aggregate) and its path in the mirror. */
  url: string;
  path: string;
  /** The original, as the `via` link names it. */
  original: string;
  /** `gone`: 404 or 410; `hash`/`length`: other bytes; `unreachable`: no answer, or another status (see `detail`). */
  reason: 'gone' | 'hash' | 'length' | 'unreachable';
  detail?: string;
}

/** The outcome of {@link auditVia}: `inStep` when every original checked is still what its `via` link says. */
export interface ViaAuditReport {
  dest: string;
  inStep: boolean;
  /** Copies with a `via` link checked, and those whose original is as the link says. */
  checked: number;
  current: number;
  /** At most 1,000 listed; see `counts`. */
  movedOn: ViaDifference[];
  counts: { gone: number; changed: number; unreachable: number };
  /** Copies past `maxResources`, not checked. */
  notChecked: number;
  /** Originals whose link gives neither hash nor length: only their presence is checked. */
  unverifiable: number;
  durationMs: number;
}

interface Copy {
  url: string;
  path: string;
  via: LinkRef;
}

/**
 * Fetches the original of every copy of `dest` that has a `via` link and compares it with the link's `hash` (the
 * first algorithm it knows) and `length`.
 * @throws `RS_INVALID_ARGUMENT` when `dest` holds no mirror
 * @example const r = await auditVia({ dest: './mirror' }); if (!r.inStep) console.log(r.movedOn);
 */
export async function auditVia(options: ViaAuditOptions): Promise<ViaAuditReport> {
  const started = performance.now();
  const max = options.maxResources ?? 1_000_000;
  const copies: Copy[] = [];
  let notChecked = 0;
  for await (const r of keptLinks(options.dest, undefined, options.state === undefined ? {} : { state: options.state })) {
    const via = r.links.via?.[0];
    if (via === undefined) continue;
    if (copies.length >= max) notChecked++;
    else copies.push({ url: r.url, path: r.path, via });
  }
  const report: ViaAuditReport = { dest: options.dest, inStep: true, checked: copies.length, current: 0, movedOn: [], counts: { gone: 0, changed: 0, unreachable: 0 }, notChecked, unverifiable: 0, durationMs: 0 };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < copies.length) {
      if (options.signal?.aborted === true) throw new ResourceSyncError('RS_ABORTED', 'The audit was aborted.');
      const copy = copies[next++]!;
      const d = await checkOriginal(copy, options, () => report.unverifiable++);
      if (d === undefined) report.current++;
      else {
        if (d.reason === 'gone') report.counts.gone++;
        else if (d.reason === 'unreachable') report.counts.unreachable++;
        else report.counts.changed++;
        if (report.movedOn.length < 1000) report.movedOn.push(d);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 4, 64)) }, worker));
  report.movedOn.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  report.inStep = report.current === report.checked;
  report.durationMs = Math.round(performance.now() - started);
  return report;
}

/** The difference between a copy's `via` link and its original now, or undefined when there is none. */
async function checkOriginal(copy: Copy, options: ViaAuditOptions, unverifiable: () => void): Promise<ViaDifference | undefined> {
  const base = { url: copy.url, path: copy.path, original: copy.via.href };
  if (!/^https?:\/\//i.test(copy.via.href) || !URL.canParse(copy.via.href)) return { ...base, reason: 'unreachable', detail: 'not an http(s) URL' };
  const origin = new URL(copy.via.href).origin;
  if (!options.allowOrigins.some((o) => URL.canParse(o) && new URL(o).origin === origin)) {
    return { ...base, reason: 'unreachable', detail: `origin ${origin} not allowed (--allow-origin)` };
  }
  const hash = knownHashes(copy.via.hash)[0];
  const length = parseLength(copy.via.length);
  if (hash === undefined && length === undefined) unverifiable();
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 30_000);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
  try {
    // a redirect is not followed: it could lead anywhere
    const res = await (options.fetch ?? fetch)(copy.via.href, { signal, redirect: 'manual' });
    // the body's read is cancelled on time-out (an aborted fetch may not stop it)
    signal.addEventListener('abort', () => void res.body?.cancel().catch(() => undefined), { once: true });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      return { ...base, reason: 'unreachable', detail: `HTTP ${res.status}: redirected, not followed` };
    }
    if (res.status === 404 || res.status === 410) {
      await res.body?.cancel();
      return { ...base, reason: 'gone', detail: `HTTP ${res.status}` };
    }
    if (!res.ok || res.body === null) {
      await res.body?.cancel();
      return { ...base, reason: 'unreachable', detail: `HTTP ${res.status}` };
    }
    const h = hash === undefined ? undefined : createHash(nodeHashName(hash.algorithm as 'md5'));
    const cap = length !== undefined ? length + 1 : (options.maxBytes ?? 2 ** 30);
    let bytes = 0;
    for await (const chunk of res.body) {
      bytes += (chunk as Uint8Array).byteLength;
      if (bytes > cap) {
        await res.body.cancel().catch(() => undefined);
        break;
      }
      h?.update(chunk as Uint8Array);
    }
    if (length === undefined && bytes > cap) return { ...base, reason: 'unreachable', detail: `larger than ${cap} bytes` };
    if (length !== undefined && bytes !== length) return { ...base, reason: 'length', detail: `${bytes} bytes, the link says ${length}` };
    if (h !== undefined && h.digest('hex') !== hash!.digest) return { ...base, reason: 'hash', detail: `${hash!.algorithm} differs` };
    return undefined;
  } catch (error) {
    return { ...base, reason: 'unreachable', detail: timeout.aborted ? 'timed out' : error instanceof Error ? error.message : String(error) };
  }
}
