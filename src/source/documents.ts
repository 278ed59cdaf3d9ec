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
import type { ChangeRecord, ListedResource, StoredResource } from './snapshot-store.js';
import { pathToUrl } from './url-path.js';

const ts = formatW3CDatetime;

function withFixity(md: Md, r: { size?: number; type?: string; hashes?: Hashes }): Md {
  if (r.hashes !== undefined) {
    const h = formatHashes(r.hashes);
    if (h !== '') md.hash = h;
  }
  if (r.size !== undefined) md.length = String(r.size);
  if (r.type !== undefined) md.type = r.type;
  return md;
}

/**
 * Header of a document of a kind: the kind's root and capability, the top-level time attributes `times`
 * (`atTimes`, `fromTimes`), and the navigation links (`up` first, then `index`, then `extra`).
 * @see Z39.99 §6.1, §6.2
 */
export function header(kind: DocumentKindId, times: Md, up?: string, index?: string, extra: Ln[] = []): DocumentHeader {
  const { root, capability } = documentKindById(kind);
  const md: Md = { capability, ...times };
  const ln: Ln[] = [];
  if (up !== undefined) ln.push({ rel: 'up', href: up });
  if (index !== undefined) ln.push({ rel: 'index', href: index });
  ln.push(...extra);
  return { root, md, ln };
}

/** A Resource List (or Resource Dump Manifest, with `path`) entry of a stored resource. @see Z39.99 §10.1, §11.2 */
export function resourceEntry(setBaseUrl: string, r: StoredResource, path?: string): Entry {
  const md = withFixity({}, r);
  if (path !== undefined) md.path = path;
  return { loc: pathToUrl(setBaseUrl, r.path), lastmod: ts(r.mtimeMs), md };
}

/** A Resource List entry from `SnapshotStore.listing()` (no hash parsing). @see Z39.99 §10.1 */
export function listedEntry(setBaseUrl: string, r: ListedResource): Entry {
  const md: Md = {};
  if (r.hashText !== '') md.hash = r.hashText;
  md.length = String(r.size);
  md.type = r.type;
  return { loc: pathToUrl(setBaseUrl, r.path), lastmod: ts(r.mtimeMs), md };
}

/**
 * A Change List (or Change Dump Manifest, with `path`) entry: `lastmod` and the 1.1 `datetime` both carry
 * the time of the change, so the entry reads right under 1.0 and 1.1. @see Z39.99 §12.1, §13.2
 */
export function changeEntry(setBaseUrl: string, c: ChangeRecord, path?: string): Entry {
  const md: Md = { change: c.change, datetime: ts(c.datetime) };
  if (c.change !== 'deleted') withFixity(md, c);
  if (path !== undefined) md.path = path;
  return { loc: pathToUrl(setBaseUrl, c.path), lastmod: ts(c.datetime), md };
}

/** An entry pointing at a capability document (Source Description, Capability List). @see Z39.99 §8, §9 */
export function capabilityEntry(loc: string, capability: string): Entry {
  return { loc, md: { capability } };
}

/** An index or archive entry for a document covering `[from, until]`. @see Z39.99 §12.2 */
export function intervalEntry(loc: string, from: number, until?: number): Entry {
  const md: Md = { from: ts(from) };
  if (until !== undefined) md.until = ts(until);
  const e: Entry = { loc, md };
  if (until !== undefined) e.lastmod = ts(until);
  return e;
}

/** An index or archive entry for a snapshot document taken at `at` (completed at `completed`). @see Z39.99 §10.2 */
export function snapshotEntry(loc: string, at: number, completed?: number): Entry {
  const md: Md = { at: ts(at) };
  if (completed !== undefined) md.completed = ts(completed);
  return { loc, md };
}

/** A dump entry: a ZIP package with type, length, md5, its time attributes and a `contents` link. @see Z39.99 §11.1, §13.1 */
export function packageEntry(
  loc: string,
  pkg: { length: number; md5: string },
  time: { at: number; completed?: number } | { from: number; until?: number },
  manifestUrl: string,
): Entry {
  const md: Md = { type: 'application/zip', length: String(pkg.length), hash: `md5:${pkg.md5}` };
  if ('at' in time) {
    md.at = ts(time.at);
    if (time.completed !== undefined) md.completed = ts(time.completed);
  } else {
    md.from = ts(time.from);
    if (time.until !== undefined) md.until = ts(time.until);
  }
  const e: Entry = { loc, md, ln: [{ rel: 'contents', href: manifestUrl, type: 'application/xml' }] };
  if ('until' in time && time.until !== undefined) e.lastmod = ts(time.until);
  return e;
}

/** Snapshot attributes of a document's top-level `rs:md` (`at`, and `completed`). @see Z39.99 Appendix A */
export function atTimes(at: number, completed?: number): Md {
  const md: Md = { at: ts(at) };
  if (completed !== undefined) md.completed = ts(completed);
  return md;
}

/** Interval attributes of a document's top-level `rs:md` (`from`, and `until` once closed). @see Z39.99 §12.1 */
export function fromTimes(from: number, until?: number): Md {
  const md: Md = { from: ts(from) };
  if (until !== undefined) md.until = ts(until);
  return md;
}

