import { ResourceSyncError } from '../core/errors.js';
import { parseHttpUrl } from '../core/http-url.js';

/**
 * Which origins a Destination may contact. Every URL the Destination follows (documents, resources,
 * redirects, mirrors, patches) passes this check, so a hostile document cannot send it elsewhere.
 * @see Z39.99 §14.2 (mirrors are on other hosts: the user allows them explicitly)
 */
export interface Authority {
  /** The normalised origins allowed, e.g. `https://example.com` (default ports dropped, lower case). */
  readonly origins: readonly string[];
  /** True when `url` is an absolute http(s) URL on an allowed origin. */
  allows(url: string): boolean;
  /** Throws `RS_AUTHORITY` (recoverable) unless `allows(url)`. */
  check(url: string): void;
}

/**
 * The normalised origin of an http(s) URL (scheme and host lower-cased, default port dropped), or
 * undefined for anything else (relative, `file:`, `javascript:`, malformed).
 * @example originOf('HTTP://Example.COM:80/a') // 'http://example.com'
 */
export function originOf(url: string): string | undefined {
  return parseHttpUrl(url)?.origin; // WHATWG URL already lower-cases and drops default ports
}

/**
 * Creates the authority check for a sync.
 * @example
 * const auth = createAuthority({ origins: ['https://example.com'] });
 * auth.allows('https://EXAMPLE.com:443/res1'); // true
 * auth.check('https://evil.example/x');       // throws RS_AUTHORITY
 */
export function createAuthority(options: { origins: string[] }): Authority {
  const set = new Set<string>();
  for (const o of options.origins) {
    const norm = originOf(o.includes('://') ? o : `https://${o}`);
    if (norm === undefined) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Origin '${o}' is not an http(s) origin.`, { data: { origin: o } });
    }
    set.add(norm);
  }
  const origins = [...set];
  const prefixes = origins.map((o) => `${o}/`);
  const allows = (url: string): boolean => {
    // Fast path: a URL written with an allowed origin exactly as normalised, then '/', has that origin.
    for (const p of prefixes) if (url.startsWith(p)) return true;
    const o = originOf(url);
    return o !== undefined && set.has(o);
  };
  return {
    origins,
    allows,
    check(url: string): void {
      if (!allows(url)) {
        throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the allowed origins (${origins.join(', ')}).`, {
          data: { url, origins },
          recoverable: true,
        });
      }
    },
  };
}
