/**
 * Checks a local web server makes before it routes a request: a path that does not percent-decode is a bad
 * request (400), and a page on loopback answers only the `Host` names it is reached by (421 otherwise), so that
 * a web page whose DNS name an attacker rebinds to 127.0.0.1 cannot read it (DNS rebinding).
 * @see RFC 3986 §2.1 (percent-encoding), RFC 9110 §7.2 (Host), §15.5.20 (421 Misdirected Request)
 */
import { isIP } from 'node:net';

/**
 * Whether the path of a request-target percent-decodes (as UTF-8): false for `%c0%2e`, `%%32%65`, `%u002e`,
 * a `%` without two hex digits. The query is not looked at.
 * @example decodablePath('/a%20b?x=%zz') // true
 */
export function decodablePath(target: string): boolean {
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  if (!path.includes('%')) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** The name part of a `Host` header value (`[::1]:80` → `[::1]`, `Example.org:8080` → `example.org`). */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/**
 * The `Host` check of a server listening at `listenUrl` (`http://127.0.0.1:8090`) and also reached as `also`
 * (public base URLs, or the name given to listen on): true for the listening address's name and, on loopback, `localhost`; for a wildcard
 * address (`0.0.0.0`, `[::]`), for any IP address (an address is never rebound, a name can be); and for the
 * names of `also`. The port is not compared (a proxy may drop it). A request without a `Host` is refused.
 * @example hostCheck('http://127.0.0.1:8090')('localhost:8090') // true; ('evil.example:8090') // false
 */
export function hostCheck(
  listenUrl: string,
  also: readonly string[] = [],
): (host: string | null | undefined) => boolean {
  const listen = new URL(listenUrl).hostname.toLowerCase();
  const allowed = new Set([listen]);
  const bare = listen.replace(/^\[|\]$/g, '');
  const wildcard = bare === '0.0.0.0' || bare === '::';
  if (wildcard || bare === '127.0.0.1' || bare === '::1' || bare === 'localhost') allowed.add('localhost');
  for (const a of also) {
    if (URL.canParse(a)) allowed.add(new URL(a).hostname.toLowerCase());
    else if (a !== '') allowed.add(hostName(a.includes(':') && !a.startsWith('[') ? `[${a}]` : a));
  }
  return (host) => {
    if (host === null || host === undefined || host === '') return false;
    const name = hostName(host);
    if (allowed.has(name)) return true;
    return wildcard && isIP(name.replace(/^\[|\]$/g, '')) !== 0;
  };
}
