/**
 * Which URLs the hub may contact (callbacks to verify and deliver to, topics to fetch): loopback
 * hosts always, any other only when an allow pattern matches. A pattern with `://` is matched
 * against the whole URL, any other against the host (`host` or `host:port`); `*` matches any run of
 * characters. Only `http:` and `https:` URLs without credentials qualify.
 * @see WebSub §5.1 (hub.callback), §8.4 (security and privacy)
 */

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

function patternRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 'i');
}

/** A compiled allow-list: `allowed(url)` says whether the hub may send requests to `url`. */
export interface UrlPolicy {
  allowed(url: string): boolean;
}

/**
 * @example createUrlPolicy(['*.example.org', 'https://dest.example.net/hooks/*']).allowed('http://127.0.0.1:9/cb') === true
 */
export function createUrlPolicy(patterns: readonly string[] = []): UrlPolicy {
  const compiled = patterns.map((p) => ({ whole: p.includes('://'), re: patternRegExp(p) }));
  return {
    allowed(url: string): boolean {
      let u: URL;
      try {
        u = new URL(url);
      } catch {
        return false;
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
      if (u.username !== '' || u.password !== '') return false;
      if (isLoopbackHost(u.hostname)) return true;
      return compiled.some((c) => c.re.test(c.whole ? u.href : u.host) || (!c.whole && c.re.test(u.hostname)));
    },
  };
}
