/**
 * The routes of the Source server: a request path becomes a file to resolve (a published document, the
 * robots.txt, or a resource of a set) or an immediate 400/404.
 * - `/.well-known/resourcesync` → the Source Description. @see Z39.99 §6.3.2
 * - `/.resourcesync/**` → the other published documents.
 * - `/robots.txt` → the published robots.txt (§6.3.4), unless the (single) set has a resource of that name.
 * - everything else → resources of the sets: one set at `/<relative path>`, several at `/<set>/<relative path>`,
 *   each with `Link: <Capability List>; rel="resourcesync"`. @see Z39.99 §6.3.3
 */
import { REL_RESOURCESYNC, WELL_KNOWN_PATH, RESOURCESYNC_DIR } from '../core/constants.js';
import { withResourceSyncLink } from '../core/html-discovery.js';
import type { FileResolver, Resolution, Rewrite, Root } from './file-resolver.js';
import { statusResponse } from './file-response.js';
import type { ResponderResponse } from './request-response.js';
import { parseTarget } from './target.js';

/** A set of resources as the router serves it. @see Z39.99 §5.1 */
interface ServedSet {
  root: Root;
  /** The `Link` header field value to the set's Capability List. */
  link: string;
  html: Rewrite | undefined;
}

/** What the router needs from the server options. */
export interface RouterOptions {
  sets: readonly { name: string; dir: string; capabilityList?: string }[];
  outDir: string;
  baseUrl?: string;
  htmlDiscoveryLink?: boolean;
  namedSets?: boolean;
}

/** Routes request paths of one Source; `roots` are every directory it serves from (to forget their real paths). */
export interface Router {
  route(path: string, prev: Resolution | undefined, at: number): Resolution | ResponderResponse;
  readonly roots: readonly Root[];
}

/** The router of a Source with these sets, documents directory and base URL. */
export function createRouter(options: RouterOptions, files: FileResolver): Router {
  const base = options.baseUrl === undefined ? undefined : new URL(options.baseUrl);
  const basePath = base === undefined ? '' : base.pathname.replace(/\/+$/, '');
  const basePrefix =
    basePath === ''
      ? []
      : basePath
          .slice(1)
          .split('/')
          .map((s) => decodeURIComponent(s));
  const origin = base === undefined ? '' : `${base.origin}${basePath}`;

  const sets = new Map<string, ServedSet>();
  for (const s of options.sets) {
    const cap = s.capabilityList ?? `${origin}/${RESOURCESYNC_DIR}/${encodeURIComponent(s.name)}/capabilitylist.xml`;
    const html =
      options.htmlDiscoveryLink === true
        ? (stored: Buffer): Uint8Array => withResourceSyncLink(stored, cap)
        : undefined;
    sets.set(s.name, { root: { dir: s.dir, real: undefined }, link: `<${cap}>; rel="${REL_RESOURCESYNC}"`, html });
  }
  const docs: Root = { dir: options.outDir, real: undefined };
  const onlySet = options.sets.length === 1 && options.namedSets !== true ? sets.get(options.sets[0]!.name)! : undefined;

  function route(path: string, prev: Resolution | undefined, at: number): Resolution | ResponderResponse {
    const parsed = parseTarget(path);
    if (!parsed.ok) return statusResponse(400, 'Bad Request');
    let segs = parsed.segments;
    if (basePrefix.length > 0 && basePrefix.length <= segs.length && basePrefix.every((p, i) => segs[i] === p)) {
      segs = segs.slice(basePrefix.length);
    }
    if (segs.length === 0 || parsed.directory) return statusResponse(404, 'Not Found');
    const first = segs[0]!;
    if (first.charCodeAt(0) === 46 /* '.' */) {
      if (first === '.well-known' && segs.length === 2 && `/${segs.join('/')}` === WELL_KNOWN_PATH) {
        return files.resolve(docs, segs, 'document', undefined, prev, at);
      }
      if (first === RESOURCESYNC_DIR && segs.length > 1 && segs.every((s, i) => i === 0 || !s.startsWith('.'))) {
        return files.resolve(docs, segs, 'document', undefined, prev, at);
      }
      return statusResponse(404, 'Not Found');
    }
    for (const s of segs) if (s.charCodeAt(0) === 46) return statusResponse(404, 'Not Found');
    if (onlySet !== undefined) {
      const r = files.resolve(onlySet.root, segs, 'resource', onlySet.link, prev, at, onlySet.html);
      if (r.info === undefined && segs.length === 1 && first === 'robots.txt') {
        return files.resolve(docs, segs, 'robots', undefined, prev, at);
      }
      return r;
    }
    if (segs.length === 1 && first === 'robots.txt') return files.resolve(docs, segs, 'robots', undefined, prev, at);
    const set = sets.get(first);
    if (set === undefined || segs.length === 1) return statusResponse(404, 'Not Found');
    return files.resolve(set.root, segs.slice(1), 'resource', set.link, prev, at, set.html);
  }

  return { route, roots: [docs, ...[...sets.values()].map((s) => s.root)] };
}
