/**
 * Resource sampling of `check`: a reservoir sample of the resources the current Resource Lists list (every
 * resource has the same chance, whatever its list), fetched and compared with what the list claims (length,
 * hashes, lastmod) and with the `Link: rel="resourcesync"` header it is served with.
 * @see Z39.99 §6.3.3, §10.1
 */
import { REL_RESOURCESYNC, type HashAlgorithm } from '../core/constants.js';
import { parseHashes, parseLength, isKnownHashAlgorithm, type HashValue } from '../core/hash.js';
import { parseLinkHeader } from '../core/link-header.js';
import type { HttpResponse } from '../client/http.js';
import { BodyDigests, hashMismatches } from '../node/body-digests.js';
import { ms, norm, reason, type CheckContext, type SampleItem } from './context.js';

/** Counts a listed resource and keeps it in the sample with the reservoir's chance. */
export function sampleResource(c: CheckContext, item: SampleItem): void {
  c.resources++;
  // reservoir sampling: every listed resource has the same chance, whatever the list
  if (c.sample.length < c.sampleSize) c.sample.push(item);
  else {
    const j = Math.floor(c.random() * c.resources);
    if (j < c.sampleSize) c.sample[j] = item;
  }
}

/** Fetches the sampled resources and compares them with their lists. @see Z39.99 §10.1 */
export async function checkResources(c: CheckContext): Promise<void> {
  for (const item of c.sample) {
    c.o.signal?.throwIfAborted();
    await resource(c, item);
    c.sampled++;
    c.progress('resources');
  }
}

/** Fetches one sampled resource and compares it with its list: the Link header, length, hashes, lastmod. */
async function resource(c: CheckContext, item: SampleItem): Promise<void> {
  const declared = parseHashes(item.md?.hash).filter((h) => isKnownHashAlgorithm(h.algorithm));
  const res = await fetchResource(c, item, declared.length > 0 ? 'GET' : 'HEAD');
  if (res === undefined) return;
  checkLinkHeader(c, item, res);
  const measured = await measureBody(res, declared);
  compareWithList(c, item, res, declared, measured);
}

/** The resource's response when it answered 200; otherwise `resource-unreachable` is noted. */
async function fetchResource(c: CheckContext, item: SampleItem, method: 'GET' | 'HEAD'): Promise<HttpResponse | undefined> {
  let res: HttpResponse;
  try {
    res = await c.request(item.loc, method);
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
    c.issue('resource-unreachable', item.loc, { list: item.list, status: reason(error) });
    return undefined;
  }
  if (res.status !== 200) {
    await res.discard();
    c.issue('resource-unreachable', item.loc, { list: item.list, status: `HTTP ${res.status}` });
    return undefined;
  }
  return res;
}

/** `Link: rel="resourcesync"` names a Capability List of this Source (the resource's own set, when known). */
function checkLinkHeader(c: CheckContext, item: SampleItem, res: HttpResponse): void {
  const link = res.headers.link;
  if (link === undefined) return;
  const targets = parseLinkHeader(link)
    .filter((l) => l.rel.includes(REL_RESOURCESYNC))
    .map((l) => norm(l.target, res.url));
  if (targets.length > 0) c.linkHeaders++;
  for (const t of targets) {
    const ok = item.set === undefined ? c.capabilityLists.includes(t) : t === item.set;
    if (!ok) c.issue('resource-link-elsewhere', item.loc, { target: t });
  }
}

/**
 * The size and digests of a resource's body, read whole when hashes are declared (a GET); else the
 * `Content-Length` of the HEAD answer (none for an encoded body).
 */
async function measureBody(
  res: HttpResponse,
  declared: readonly HashValue[],
): Promise<{ size: number | undefined; digests: Record<string, string> }> {
  if (declared.length === 0) {
    await res.discard();
    const cl = res.headers['content-length'];
    return { size: cl === undefined || res.headers['content-encoding'] !== undefined ? undefined : Number(cl), digests: {} };
  }
  const hashes = new BodyDigests(new Set(declared.map((h) => h.algorithm as HashAlgorithm)));
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    hashes.update(chunk);
  }
  return { size, digests: hashes.digest() };
}

/**
 * Length and hashes against the list (a difference on a resource changed since the list was made is one
 * `resource-changed-since-list`), then lastmod against `Last-Modified`.
 */
function compareWithList(c: CheckContext, item: SampleItem, res: HttpResponse, declared: readonly HashValue[], measured: { size: number | undefined; digests: Record<string, string> }): void {
  const { size, digests } = measured;
  const length = parseLength(item.md?.length);
  const lastModified =
    res.headers['last-modified'] === undefined ? undefined : Date.parse(res.headers['last-modified']);
  const listAt = ms(item.listAt);
  const changedSince = lastModified !== undefined && listAt !== undefined && lastModified > listAt + 999;
  const differences: Array<() => void> = [];
  if (length !== undefined && size !== undefined && size !== length) {
    differences.push(() =>
      c.issue('resource-length-mismatch', item.loc, { list: item.list, expected: length, actual: size }),
    );
  }
  for (const { algorithm, expected, actual } of hashMismatches(declared, digests)) {
    differences.push(() => c.issue('resource-hash-mismatch', item.loc, { list: item.list, algorithm, expected, actual }));
  }
  if (differences.length > 0) {
    if (changedSince) {
      c.issue('resource-changed-since-list', item.loc, {
        list: item.list,
        what: 'length or hash',
        lastModified: new Date(lastModified).toISOString(),
        at: item.listAt,
      });
    } else for (const d of differences) d();
  } else if (item.lastmod !== undefined && lastModified !== undefined && !Number.isNaN(lastModified)) {
    const lm = ms(item.lastmod);
    // HTTP dates have whole seconds
    if (lm !== undefined && Math.abs(Math.floor(lm / 1000) * 1000 - lastModified) >= 1000) {
      c.issue('resource-lastmod-mismatch', item.loc, {
        list: item.list,
        expected: item.lastmod,
        actual: new Date(lastModified).toISOString(),
      });
    }
  }
}
