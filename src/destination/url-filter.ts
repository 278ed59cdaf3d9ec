/**
 * The URL filter of a sync: only the resources whose URL starts with one of the given prefixes are mirrored. A
 * Destination may synchronize a subset of a Source (Z39.99 §5.2 leaves the choice of resources to the Destination);
 * the filter is applied where every resource enters the mirror (the resource applier, the dumps' items) and where
 * deletions are inferred: a resource outside the filter is never fetched, written or deleted because of a change,
 * and one held from before that falls outside the filter is, on the next baseline, a resource the mirror should not
 * hold (removed with `delete`, else reported as a deletion skipped).
 * @see Z39.99 §5.2
 */
import { ResourceSyncError } from '../core/errors.js';
import { parseHttpUrl } from '../core/http-url.js';

/** Most prefixes in one filter. */
const MAX_PREFIXES = 1000;

/**
 * Checks URL prefixes: each an absolute http(s) URL without credentials or fragment, at most 1,000.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` naming the first prefix refused (`data.prefix`)
 * @example checkUrlPrefixes(['https://repo.example.org/oai/']) // ['https://repo.example.org/oai/']
 */
export function checkUrlPrefixes(prefixes: readonly string[]): string[] {
  if (prefixes.length > MAX_PREFIXES) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `More than ${MAX_PREFIXES} URL prefixes.`, { data: { count: prefixes.length } });
  }
  for (const prefix of prefixes) {
    const problem = urlPrefixProblem(prefix);
    if (problem !== undefined) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `URL prefix '${prefix}' ${problem}.`, { data: { prefix } });
  }
  return [...prefixes];
}

/**
 * What is wrong with a URL prefix, or undefined when it is an absolute http(s) URL without credentials or fragment.
 * @example urlPrefixProblem('/oai/') // 'is not an absolute http(s) URL'
 */
export function urlPrefixProblem(prefix: string): string | undefined {
  if (parseHttpUrl(prefix) === undefined || !/^https?:\/\//i.test(prefix)) return 'is not an absolute http(s) URL (without user name or password)';
  if (prefix.includes('#')) return 'has a fragment';
  return undefined;
}

/**
 * The predicate of a filter: true for a URL that starts with one of `prefixes` (compared as written, character by
 * character; the scheme and host in lower case on both sides); undefined when there is no filter.
 * @example urlFilter(['https://r.example/a/'])?.('https://r.example/a/1.xml') // true
 */
export function urlFilter(prefixes: readonly string[] | undefined): ((url: string) => boolean) | undefined {
  if (prefixes === undefined || prefixes.length === 0) return undefined;
  const wanted = prefixes.map(lowerAuthority);
  return (url) => {
    const u = lowerAuthority(url);
    return wanted.some((p) => u.startsWith(p));
  };
}

/**
 * The key of a filter as the state remembers it with a baseline: a changed filter asks for a new baseline (the
 * resources it now takes in were never fetched, those it leaves out are to be removed). '' for no filter.
 */
export function urlFilterKey(prefixes: readonly string[] | undefined): string {
  return prefixes === undefined || prefixes.length === 0 ? '' : JSON.stringify([...new Set(prefixes.map(lowerAuthority))].sort());
}

/** The URL with its scheme and authority in lower case, the rest as written. */
function lowerAuthority(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)(.*)$/is.exec(url);
  return m === null ? url : `${m[1]!.toLowerCase()}${m[2]!}`;
}
