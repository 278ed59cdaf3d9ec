/**
 * The documents of a Source, named in the spec's words, as headers and entries ready for the writer:
 * pure functions from stored records to `DocumentHeader` + `Entry`.
 * @see Z39.99 §8 (Source Description), §9 (Capability List), §10 (Resource List and Index), §11 (Resource
 * Dump and Manifest), §12 (Change List and Index), §13 (Change Dump and Manifest), Appendix A;
 * ResourceSync Archives (D-Lib 2013; archives examples 2–6)
 */
import { documentKindById, type DocumentKindId } from '../core/model/document-kinds.js';
import type { DocumentHeader, Entry, Ln, Md } from '../core/model/types.js';
import { formatHashes } from '../core/hash.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import type { Hashes } from '../node/inventory.js';
import type { ChangeRecord, ListedResource, StoredResource } from './snapshot-rows.js';
import { NO_LASTMOD, NO_LENGTH } from '../node/inventory-types.js';
import { pathToUrl } from './url-path.js';

/**
 * The URL of a stored resource: its path under the set's base URL, or, for a set whose base is '' (an inventory
 * given as records, see `InventoryFeed`), the path itself, which is the resource's `loc` as given.
 */
function resourceLoc(setBaseUrl: string, path: string): string {
  return setBaseUrl === '' ? path : pathToUrl(setBaseUrl, path);
}

/** A resource entry's `loc` and `lastmod` (left out when not known). */
function locAndLastmod(setBaseUrl: string, r: { path: string; mtimeMs: number }): Pick<Entry, 'loc' | 'lastmod'> {
  const loc = resourceLoc(setBaseUrl, r.path);
  return r.mtimeMs === NO_LASTMOD ? { loc } : { loc, lastmod: formatW3CDatetime(r.mtimeMs) };
}

function withFixity(md: Md, r: { size?: number; type?: string; hashes?: Hashes }): Md {
  if (r.hashes !== undefined) {
    const h = formatHashes(r.hashes);
    if (h !== '') md.hash = h;
  }
  if (r.size !== undefined && r.size !== NO_LENGTH) md.length = String(r.size);
  if (r.type !== undefined && r.type !== '') md.type = r.type;
  return md;
}

/** The navigation links of a document's header. */
export interface HeaderLinks {
  /** The parent document (`rel="up"`): the Capability List, or the Source Description for a Capability List. */
  up?: string | undefined;
  /** The index the document is a part of (`rel="index"`). */
  index?: string | undefined;
  /** Further top-level links (`describedby`, `archives`), after `up` and `index`. */
  links?: Ln[];
}

/**
 * Header of a document of a kind: the kind's root and capability, the top-level time attributes `times`
 * (`atTimes`, `fromTimes`), and the navigation links (`up` first, then `index`, then `links`).
 * @see Z39.99 §6.1, §6.2
 */
export function header(kind: DocumentKindId, times: Md, navigation: HeaderLinks = {}): DocumentHeader {
  const { root, capability } = documentKindById(kind);
  const md: Md = { capability, ...times };
  const ln: Ln[] = [];
  if (navigation.up !== undefined) ln.push({ rel: 'up', href: navigation.up });
  if (navigation.index !== undefined) ln.push({ rel: 'index', href: navigation.index });
  ln.push(...(navigation.links ?? []));
  return { root, md, ln };
}

/** A Resource List (or Resource Dump Manifest, with `path`) entry of a stored resource. @see Z39.99 §10.1, §11.2 */
export function resourceEntry(setBaseUrl: string, r: StoredResource, path?: string): Entry {
  const md = withFixity({}, r);
  if (path !== undefined) md.path = path;
  return { ...locAndLastmod(setBaseUrl, r), md };
}

/** A Resource List entry from `SourceSnapshots.listing()` (no hash parsing). @see Z39.99 §10.1 */
export function listedEntry(setBaseUrl: string, r: ListedResource): Entry {
  const md: Md = {};
  if (r.hashText !== '') md.hash = r.hashText;
  if (r.size !== NO_LENGTH) md.length = String(r.size);
  if (r.type !== '') md.type = r.type;
  return { ...locAndLastmod(setBaseUrl, r), md };
}

/**
 * A Change List (or Change Dump Manifest, with `path`) entry: `lastmod` and the 1.1 `datetime` both carry
 * the time of the change, so the entry reads right under 1.0 and 1.1. @see Z39.99 §12.1, §13.2
 */
export function changeEntry(setBaseUrl: string, c: ChangeRecord, path?: string): Entry {
  const md: Md = { change: c.change, datetime: formatW3CDatetime(c.datetime) };
  if (c.change !== 'deleted') withFixity(md, c);
  if (path !== undefined) md.path = path;
  return { loc: resourceLoc(setBaseUrl, c.path), lastmod: formatW3CDatetime(c.datetime), md };
}

/** An entry pointing at a capability document (Source Description, Capability List). @see Z39.99 §8, §9 */
export function capabilityEntry(loc: string, capability: string): Entry {
  return { loc, md: { capability } };
}

/** An index or archive entry for a document covering `[from, until]`. @see Z39.99 §12.2 */
export function intervalEntry(loc: string, from: number, until?: number): Entry {
  const md: Md = { from: formatW3CDatetime(from) };
  if (until !== undefined) md.until = formatW3CDatetime(until);
  const e: Entry = { loc, md };
  if (until !== undefined) e.lastmod = formatW3CDatetime(until);
  return e;
}

/** An index or archive entry for a snapshot document taken at `at` (completed at `completed`). @see Z39.99 §10.2 */
export function snapshotEntry(loc: string, at: number, completed?: number): Entry {
  const md: Md = { at: formatW3CDatetime(at) };
  if (completed !== undefined) md.completed = formatW3CDatetime(completed);
  return { loc, md };
}

/** A dump entry: a ZIP package with type, length, md5, its time attributes and a `contents` link. @see Z39.99 §11.1, §13.1 */
export function packageEntry(
  loc: string,
  pkg: { length: number; md5: string },
  time: { at: number; completed?: number } | { from: number; until?: number },
  manifestUrl: string,
  type = 'application/zip',
): Entry {
  const md: Md = { type, length: String(pkg.length), hash: `md5:${pkg.md5}` };
  if ('at' in time) {
    md.at = formatW3CDatetime(time.at);
    if (time.completed !== undefined) md.completed = formatW3CDatetime(time.completed);
  } else {
    md.from = formatW3CDatetime(time.from);
    if (time.until !== undefined) md.until = formatW3CDatetime(time.until);
  }
  const e: Entry = { loc, md, ln: [{ rel: 'contents', href: manifestUrl, type: 'application/xml' }] };
  if ('until' in time && time.until !== undefined) e.lastmod = formatW3CDatetime(time.until);
  return e;
}

/** Snapshot attributes of a document's top-level `rs:md` (`at`, and `completed`). @see Z39.99 Appendix A */
export function atTimes(at: number, completed?: number): Md {
  const md: Md = { at: formatW3CDatetime(at) };
  if (completed !== undefined) md.completed = formatW3CDatetime(completed);
  return md;
}

/** Interval attributes of a document's top-level `rs:md` (`from`, and `until` once closed). @see Z39.99 §12.1 */
export function fromTimes(from: number, until?: number): Md {
  const md: Md = { from: formatW3CDatetime(from) };
  if (until !== undefined) md.until = formatW3CDatetime(until);
  return md;
}

