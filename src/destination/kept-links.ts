import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { relatedLinks, type RelatedLinks } from './links.js';
import { openSqliteDestinationState, STATE_DIR } from './sqlite-state.js';
import type { DestinationState, ResourceRecord } from './state.js';

/** The §14 links a mirror keeps for one resource it holds. */
export interface ResourceLinks {
  url: string;
  /** The resource's path in the mirror, `/`-separated. */
  path: string;
  /** The kept relations (`alternate`, `memento`, `describedby`, `via`, …) with absolute targets. */
  links: RelatedLinks;
}

const linksOf = (r: ResourceRecord): ResourceLinks => ({
  url: r.url,
  path: r.path,
  links: relatedLinks({ loc: r.url, ...(r.links !== undefined ? { ln: r.links } : {}) }),
});

/**
 * The links kept in a mirror's state for its resources, read without changing anything: every resource that has
 * kept links, in URL order, or the one resource whose URL or mirror path is `select` (its links may be empty).
 * Throws `RS_INVALID_ARGUMENT` when `dest` holds no mirror state. With `options.state` (the caller's, not closed
 * here), the links are read from that state instead of `<dest>/.resourcesync/state.sqlite`.
 * @see Z39.99 §14 (links kept: §14.3, §14.5–§14.8)
 * @example for (const r of keptLinks('./mirror')) console.log(r.path, r.links.describedby?.[0]?.href);
 */
export async function* keptLinks(dest: string, select?: string, options: { state?: DestinationState } = {}): AsyncGenerator<ResourceLinks> {
  const root = resolve(dest);
  if (options.state === undefined && !existsSync(join(root, STATE_DIR, 'state.sqlite'))) {
    throw new ResourceSyncError(
      'RS_INVALID_ARGUMENT',
      `'${dest}' holds no mirror (no ${STATE_DIR}/state.sqlite): sync into it first.`,
      { data: { dest } },
    );
  }
  const store = options.state ?? (await openSqliteDestinationState(root, { readonly: true }));
  try {
    if (select === undefined) {
      for await (const r of store.records()) {
        const found = linksOf(r);
        if (Object.keys(found.links).length > 0) yield found;
      }
      return;
    }
    const byUrl = await store.get(select);
    if (byUrl !== undefined) {
      yield linksOf(byUrl);
      return;
    }
    const path = select.replace(/^\.\//, '');
    for await (const r of store.records()) {
      if (r.path === path) {
        yield linksOf(r);
        return;
      }
    }
  } finally {
    if (options.state === undefined) await store.close();
  }
}
