/**
 * Parsing of an HTTP request-target into decoded path segments, refusing everything that could name a file
 * outside the served directories. Pure: the file-system half of confinement (symlinks) is in `file-resolver.ts`.
 * @see RFC 9112 §3.2 (request-target), RFC 3986 §3.3 (path segments)
 */

/** A request-target reduced to its decoded path segments. */
export type ParsedTarget =
  | {
      ok: true;
      /** Decoded, non-empty segments; `[]` for `/`. */
      segments: string[];
      /** True when the path ends with `/` (a directory request). */
      directory: boolean;
    }
  | { ok: false; reason: string };

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const ENCODED_SEPARATOR = /%(2f|5c|00)/i;

/**
 * Splits and decodes the path of a request-target (origin-form or absolute-form). Refused, with a reason:
 * a target not starting with `/`, empty inner segments, segments that are `.` or `..` (also when encoded as
 * `%2e`), encoded `/` (`%2f`), encoded or raw `\`, NUL and other control characters, malformed
 * percent-encoding. The query and fragment are ignored.
 * @example parseTarget('/a%20b/c.txt?x=1') // { ok: true, segments: ['a b', 'c.txt'], directory: false }
 */
export function parseTarget(target: string): ParsedTarget {
  let path = target;
  const q = path.indexOf('?');
  if (q >= 0) path = path.slice(0, q);
  const h = path.indexOf('#');
  if (h >= 0) path = path.slice(0, h);
  if (!path.startsWith('/')) {
    const m = /^https?:\/\/[^/]*/i.exec(path);
    if (m === null) return { ok: false, reason: 'not an origin-form target' };
    path = path.slice(m[0].length) || '/';
  }
  if (path === '/') return { ok: true, segments: [], directory: true };
  const raw = path.slice(1).split('/');
  let directory = false;
  if (raw[raw.length - 1] === '') {
    raw.pop();
    directory = true;
  }
  const segments: string[] = [];
  for (const r of raw) {
    if (r === '') return { ok: false, reason: 'empty segment' };
    let s = r;
    if (r.includes('%')) {
      if (ENCODED_SEPARATOR.test(r)) return { ok: false, reason: 'encoded separator or NUL' };
      try {
        s = decodeURIComponent(r);
      } catch {
        return { ok: false, reason: 'malformed percent-encoding' };
      }
    }
    if (s === '.' || s === '..') return { ok: false, reason: 'dot segment' };
    if (s.includes('\\') || s.includes('/')) return { ok: false, reason: 'backslash' };
    if (CONTROL.test(s)) return { ok: false, reason: 'control character' };
    segments.push(s);
  }
  return { ok: true, segments, directory };
}
