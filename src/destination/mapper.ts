import { ResourceSyncError, messageOf } from '../core/errors.js';
import { safeRelativePath } from '../node/safe-path.js';

/** One `URL=DIR` pair: resources under `url` land under `dir` (relative to the destination, '' for its root). */
export interface Mapping {
  url: string;
  dir: string;
}

/** Maps resource URLs to paths relative to the destination directory. */
export interface Mapper {
  /** The mappings in use, longest URL prefix first. */
  readonly mappings: readonly Mapping[];
  /**
   * The relative path (`a/b.txt`) of a resource, or throws `RS_AUTHORITY` (outside every mapping) or
   * `RS_UNSAFE_PATH` (would leave the destination, encoded separators, query strings, directory URLs).
   */
  toPath(url: string): string;
  /** Like `toPath` but returns undefined instead of throwing. */
  tryPath(url: string): string | undefined;
  /** The URL a relative path would have under the first mapping whose directory contains it. */
  toUrl(relPath: string): string | undefined;
}

interface Prepared {
  prefix: string; // origin + path prefix ending with '/'
  dir: string; // '' or 'a/b'
}

function prepare(m: Mapping): Prepared {
  let u: URL;
  try {
    u = new URL(m.url);
  } catch {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Mapping '${m.url}' is not an absolute URL.`, { data: { url: m.url } });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Mapping '${m.url}' is not an http(s) URL.`, { data: { url: m.url } });
  }
  let path = u.pathname;
  if (!path.endsWith('/')) path = path.slice(0, path.lastIndexOf('/') + 1);
  const dir = m.dir === '' || m.dir === '.' ? '' : safeRelativePath(m.dir.replace(/\/+$/, ''));
  return { prefix: `${u.origin}${path}`, dir };
}

function safeRelativePathOrUndefined(p: string): string | undefined {
  if (p.includes('//') || p.startsWith('/') || /(^|\/)\.\.?(\/|$)/.test(p)) return undefined;
  try {
    return safeRelativePath(p);
  } catch {
    return undefined;
  }
}

function unsafe(url: string, why: string): ResourceSyncError {
  return new ResourceSyncError('RS_UNSAFE_PATH', `URL '${url}' ${why}.`, { data: { url }, recoverable: true });
}

/**
 * Creates the URL → path mapper. A resource at `<base>/a/b.txt` lands at `a/b.txt`; names are percent-decoded
 * segment by segment (an encoded `/` or `\` is refused), then checked by `safeRelativePath`, so a mirror of a
 * directory published over HTTP is byte-for-byte that directory.
 * `base` is a URL whose origin and directory part form the prefix (the starting URL's origin by default);
 * `maps` add `URL=DIR` pairs (the longest matching prefix wins).
 * @example
 * const m = createMapper({ base: 'http://example.com/' });
 * m.toPath('http://example.com/a/caf%C3%A9%20menu.txt'); // 'a/café menu.txt'
 * m.toPath('http://example.com/a/..%2F..%2Fetc/passwd'); // throws RS_UNSAFE_PATH
 */
export function createMapper(options: { base?: string; maps?: Mapping[] }): Mapper {
  const list: Mapping[] = [...(options.maps ?? [])];
  if (options.base !== undefined) list.push({ url: options.base, dir: '' });
  if (list.length === 0) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'Mapper needs a base URL or at least one mapping.');
  const prepared = list.map(prepare).sort((a, b) => b.prefix.length - a.prefix.length);

  // Characters a URL path keeps as they are (no percent-encoding, no normalisation by the URL parser).
  const PLAIN = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]+$/;
  const toPath = (url: string): string => {
    // Fast path: `<prefix>plain/relative/path` needs neither URL parsing nor decoding.
    for (const p of prepared) {
      if (!url.startsWith(p.prefix)) continue;
      const rest = url.slice(p.prefix.length);
      if (rest !== '' && PLAIN.test(rest) && !rest.endsWith('/')) {
        const rel = safeRelativePathOrUndefined(p.dir === '' ? rest : `${p.dir}/${rest}`);
        if (rel !== undefined) return rel;
      }
      break; // the general path decides (and explains)
    }
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw unsafe(url, 'is not an absolute URL');
    }
    if (u.search !== '') throw unsafe(url, 'has a query string that cannot name a file');
    const full = `${u.origin}${u.pathname}`;
    const m = prepared.find((p) => full.startsWith(p.prefix));
    if (m === undefined) {
      throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside every mapped base (${prepared.map((p) => p.prefix).join(', ')}).`, {
        data: { url },
        recoverable: true,
      });
    }
    const rest = full.slice(m.prefix.length);
    if (rest === '' || rest.endsWith('/')) throw unsafe(url, 'names a directory, not a file');
    const segments = rest.split('/').map((s) => {
      let d: string;
      try {
        d = decodeURIComponent(s);
      } catch {
        throw unsafe(url, 'has malformed percent-encoding');
      }
      if (d.includes('/') || d.includes('\\')) throw unsafe(url, 'has an encoded path separator');
      return d;
    });
    const rel = segments.join('/');
    try {
      return safeRelativePath(m.dir === '' ? rel : `${m.dir}/${rel}`);
    } catch (err) {
      throw unsafe(url, `maps to an unsafe path (${messageOf(err)})`);
    }
  };

  return {
    mappings: prepared.map((p) => ({ url: p.prefix, dir: p.dir })),
    toPath,
    tryPath(url: string): string | undefined {
      try {
        return toPath(url);
      } catch {
        return undefined;
      }
    },
    toUrl(relPath: string): string | undefined {
      const enc = (p: string): string => p.split('/').map(encodeURIComponent).join('/');
      // most specific directory first
      const byDir = [...prepared].sort((a, b) => b.dir.length - a.dir.length);
      for (const p of byDir) {
        if (p.dir === '') return `${p.prefix}${enc(relPath)}`;
        if (relPath.startsWith(`${p.dir}/`)) return `${p.prefix}${enc(relPath.slice(p.dir.length + 1))}`;
      }
      return undefined;
    },
  };
}
