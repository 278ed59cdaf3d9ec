/**
 * Relative file path ↔ resource URL under a base URL, and the layout of a Source's URL space.
 *
 * Layout (documented for the server and for `build`):
 * - with a single set of resources, a file `a/b c.txt` of the set is at `<baseUrl>a/b%20c.txt`;
 * - with several sets, it is at `<baseUrl><set name>/a/b%20c.txt`;
 * - the Source Description is at `<baseUrl>.well-known/resourcesync` (Z39.99 §6.3.2: at the host root
 *   when the base URL has no path);
 * - every other document of set `s` is under `<baseUrl>.resourcesync/<s>/`. Hidden names (starting
 *   with `.`) are never published, so this prefix cannot collide with a resource.
 * @see Z39.99 §6.1, §6.3.2
 */
import { safeRelativePath } from '../node/safe-path.js';
import { RESOURCESYNC_DIR } from '../core/constants.js';
import { parseHttpUrl } from '../core/http-url.js';


/** The folder (URL path segment) under the base URL that holds every document but the Source Description. */
export const DOCUMENTS_PREFIX = RESOURCESYNC_DIR;

/** A set of resources as published: its name and the directory that holds it. */
export interface ResourceSet {
  /** One URL segment: letters, digits, `.`, `_`, `-`, not starting with `.`. */
  name: string;
  dir: string;
}

const SET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/;

/** True when `name` can name a set of resources (one safe URL path segment, not hidden). */
export function isValidSetName(name: string): boolean {
  return SET_NAME.test(name);
}

/**
 * Normalises a base URL: absolute http(s), no query or fragment, path ending with `/`.
 * Returns undefined when `value` cannot serve as a base URL.
 * @example normalizeBaseUrl('http://example.com/data') === 'http://example.com/data/'
 */
export function normalizeBaseUrl(value: string): string | undefined {
  const u = parseHttpUrl(value);
  if (u === undefined || u.search !== '' || u.hash !== '') return undefined;
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  return u.href;
}

/**
 * Percent-encodes one path segment: everything but unreserved characters and `!'()*` is encoded,
 * non-ASCII as UTF-8 `%XX`. Reserved characters such as `#?%+;:=@&$,` are always encoded, so the
 * inverse is exactly `decodeURIComponent`.
 */
export function encodeSegment(segment: string): string {
  return encodeURIComponent(segment);
}

/**
 * The URL of a relative file path (`/`-separated) under a base URL ending with `/`.
 * @example pathToUrl('http://ex.org/', 'a b/é#1.txt') === 'http://ex.org/a%20b/%C3%A9%231.txt'
 */
export function pathToUrl(baseUrl: string, relPath: string): string {
  return baseUrl + relPath.split('/').map(encodeSegment).join('/');
}

/**
 * The exact inverse of `pathToUrl`: the relative path of a URL under `baseUrl`, or undefined when the
 * URL is not under it or does not name a safe relative path (empty, `..`, encoded `/` or `\`, bad
 * percent-encoding, control characters).
 */
export function urlToPath(baseUrl: string, url: string): string | undefined {
  if (!url.startsWith(baseUrl)) return undefined;
  return decodeUrlPath(url.slice(baseUrl.length));
}

/**
 * Decodes a `/`-separated, percent-encoded relative URL path into a relative file path, segment by
 * segment. Undefined when a segment is empty, decodes to `.`/`..`, holds `/`, `\`, NUL or control
 * characters, or is malformed.
 */
export function decodeUrlPath(encoded: string): string | undefined {
  if (encoded === '' || encoded.includes('?') || encoded.includes('#')) return undefined;
  const out: string[] = [];
  for (const seg of encoded.split('/')) {
    let d: string;
    try {
      d = decodeURIComponent(seg);
    } catch {
      return undefined;
    }
    if (d.includes('/')) return undefined;
    out.push(d);
  }
  const joined = out.join('/');
  try {
    return safeRelativePath(joined) === joined ? joined : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Base URL of the resources of set `name`: `baseUrl` itself with one set, `<baseUrl><name>/` with several (or
 * always, with `named`: a Source whose sets come and go keeps its URLs).
 */
export function setBaseUrl(baseUrl: string, name: string, setCount: number, named = false): string {
  return setCount === 1 && !named ? baseUrl : `${baseUrl}${encodeSegment(name)}/`;
}

/** URL path (relative to the base URL) of the folder holding the documents of set `name`. */
export function setDocumentsPath(name: string): string {
  return `${DOCUMENTS_PREFIX}/${name}/`;
}

/** A resource file found by `resolveResource`. */
export interface ResolvedResource {
  set: ResourceSet;
  /** Relative `/`-separated file path inside `set.dir`; never hidden, never `..`. */
  path: string;
}

/**
 * Maps a URL path to a resource file: which set, and the relative path inside its directory.
 * `urlPath` is the path of the request URL relative to the base URL's path, still percent-encoded, with
 * or without a leading `/` (e.g. `/a%20b.txt`, or `/set2/a%20b.txt` when there are several sets).
 * Returns undefined for documents, hidden names (any segment starting with `.`), traversal attempts
 * (`..`, `%2e%2e`, `%2f`, `\`) and malformed encodings. The server still confines the file (symlinks).
 * @example resolveResource([{ name: 'data', dir: '/srv/data' }], '/a%20b.txt') // { set, path: 'a b.txt' }
 */
export function resolveResource(sets: readonly ResourceSet[], urlPath: string): ResolvedResource | undefined {
  const p = urlPath.replace(/^\/+/, '');
  let set: ResourceSet | undefined;
  let rest: string;
  if (sets.length === 1) {
    set = sets[0];
    rest = p;
  } else {
    const slash = p.indexOf('/');
    if (slash <= 0) return undefined;
    let name: string;
    try {
      name = decodeURIComponent(p.slice(0, slash));
    } catch {
      return undefined;
    }
    set = sets.find((s) => s.name === name);
    rest = p.slice(slash + 1);
  }
  if (set === undefined) return undefined;
  const path = decodeUrlPath(rest);
  if (path === undefined) return undefined;
  if (path.split('/').some((seg) => seg.startsWith('.'))) return undefined;
  return { set, path };
}
