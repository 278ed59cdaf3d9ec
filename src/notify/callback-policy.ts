/**
 * Which URLs the hub may contact (callbacks to verify and deliver to, topics to fetch): loopback
 * hosts always, any other only when an allow pattern matches. A pattern is matched part by part,
 * never as one string: `scheme://host[:port]/path` compares the scheme, the host (a `*` there matches
 * letters, digits, `-` and `.`, never `/`, `:` or `@`), the port (the scheme's default when the
 * pattern names none; `:*` for any) and the path with its query (`*` matches anything there); a
 * pattern without `://` is a host (`*.example.org`) or `host:port`, any port when none is named.
 * So `http://*.example.org/*` refuses `http://192.0.2.1:1/x.example.org/`. Only `http:` and `https:`
 * URLs without credentials qualify.
 * @see WebSub §5.1 (hub.callback), §8.4 (security and privacy)
 */
import { parseHttpUrl } from '../core/http-url.js';

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

function glob(pattern: string, any: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join(any);
  return new RegExp(`^${body}$`, 'i');
}

/** The host of a pattern: `*` matches a run of host characters only. */
const HOST_RUN = '[a-z0-9.-]*';

interface Pattern {
  scheme?: string;
  host: RegExp;
  /** undefined: any port (host patterns); '' the scheme's default; '*' any. */
  port: string | undefined;
  path?: RegExp;
}

function compile(pattern: string): Pattern {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/i.exec(pattern);
  if (m === null) {
    const hp = /^(.*?)(?::(\d+|\*))?$/.exec(pattern)!;
    return { host: glob(hp[1]!, HOST_RUN), port: hp[2] };
  }
  const hp = /^(.*?)(?::(\d+|\*))?$/.exec(m[2]!)!;
  return {
    scheme: `${m[1]!.toLowerCase()}:`,
    host: glob(hp[1]!, HOST_RUN),
    port: hp[2] ?? '',
    path: glob(m[3] === '' ? '/' : m[3]!, '.*'),
  };
}

function matches(p: Pattern, u: URL): boolean {
  if (p.scheme !== undefined && p.scheme !== u.protocol) return false;
  if (!p.host.test(u.hostname)) return false;
  if (p.port !== undefined && p.port !== '*' && p.port !== u.port) return false;
  return p.path === undefined || p.path.test(`${u.pathname}${u.search}`);
}

/** A compiled allow-list: `allowed(url)` says whether the hub may send requests to `url`. */
export interface UrlPolicy {
  allowed(url: string): boolean;
}

/**
 * @example createUrlPolicy(['*.example.org', 'https://dest.example.net/hooks/*']).allowed('http://127.0.0.1:9/cb') === true
 */
export function createUrlPolicy(patterns: readonly string[] = []): UrlPolicy {
  const compiled = patterns.map(compile);
  return {
    allowed(url: string): boolean {
      const u = parseHttpUrl(url);
      if (u === undefined) return false;
      if (isLoopbackHost(u.hostname)) return true;
      return compiled.some((p) => matches(p, u));
    },
  };
}
