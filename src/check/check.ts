/**
 * `check`: crawls a live Source from any URL and judges it whole. Every document reached is streamed through
 * the validator under the version of the standard it implies; the rules that span documents (up and index
 * links, one capability per document and set, Change List Index intervals, archives, dump packages and
 * their manifests, discovery) are checked from what the crawl keeps, which is bounded by the number of
 * documents, never by the number of resources; a sample of resources is fetched and compared with what
 * the lists claim. Requests are sequential and paced (`rate`).
 *
 * Its parts: `context.ts` (the state of a run), `crawl.ts` (documents and what their listers say),
 * `cross-document.ts`, `dump-packages.ts`, `resources.ts` (the sample) and `report.ts` (the report's types).
 * @see Z39.99 §6 (structure, navigation, discovery), §8–13, ResourceSync Archives
 */
import { parseLength } from '../core/hash.js';
import { discover, type Discovery } from '../destination/discover.js';
import { CheckContext, norm } from './context.js';
import { crawl } from './crawl.js';
import { checkChannels, checkDiscovery, checkOtherIndexes, checkRelisted } from './cross-document.js';
import { checkPackages } from './dump-packages.js';
import { countIssues, type CheckOptions, type CheckReport } from './report.js';
import { checkResources } from './resources.js';

export type { CheckIssue, CheckedDocument, CheckProgress, CheckOptions, CheckReport } from './report.js';

/**
 * Crawls and judges a Source. Throws (`RS_NETWORK`, `RS_HTTP_TIMEOUT`, `RS_NOT_RESOURCESYNC`, `RS_AUTHORITY`…)
 * only when nothing of the Source can be reached; everything found after that becomes an issue.
 * @example
 * const authority = createAuthority({ origins: [new URL(url).origin] });
 * const http = createHttpClient({ authority });
 * const report = await check({ url, http, authority, sample: 100 });
 * report.conformant; // true when no MUST is broken
 */
export async function check(options: CheckOptions): Promise<CheckReport> {
  const started = performance.now();
  return run(new CheckContext(options)).then((r) => ({ ...r, durationMs: Math.round(performance.now() - started) }));
}

async function run(c: CheckContext): Promise<Omit<CheckReport, 'durationMs'>> {
  c.progress('discovery');
  let discovery: Discovery;
  try {
    discovery = await discover(c.o.url, {
      http: (url, init) => {
        c.requests++;
        return c.http(url, init);
      },
      authority: c.o.authority,
      ...(c.o.signal ? { signal: c.o.signal } : {}),
    });
  } catch (error) {
    // a Source found nowhere because a document of it was too slow: that is the reason to give
    throw c.late[0] ?? error;
  }
  const sd = discovery.sourceDescription;
  // The Source Description first; then the sets discovery found that it did not list.
  if (sd !== undefined) {
    c.enqueue({ url: norm(sd), via: 'start', capability: 'description' });
    await crawl(c);
  }
  for (const cl of discovery.capabilityLists) {
    if (cl.synthetic === true) {
      for (const urls of Object.values(cl.capabilities))
        for (const u of urls ?? []) c.enqueue({ url: norm(u), via: 'start' });
    } else c.enqueue({ url: norm(cl.url), via: 'start', capability: 'capabilitylist' });
  }
  await crawl(c);
  checkRelisted(c);
  await checkOtherIndexes(c);
  if (c.o.packages !== false) await checkPackages(c);
  else {
    for (const p of c.packages) {
      c.documents.push({
        url: p.url,
        kind: 'package',
        parent: p.dump,
        entries: 0,
        bytes: parseLength(p.md?.length) ?? 0,
        errors: 0,
        warnings: 0,
      });
    }
  }
  await checkChannels(c);
  if (c.o.discoveryRules !== false) await checkDiscovery(c, discovery);
  await checkResources(c);
  if (c.truncated > 0) c.issue('crawl-truncated', c.o.url, { what: `${c.truncated} documents`, limit: c.maxDocuments });

  const errors = countIssues(c.documents, c.issues);
  return {
    start: c.o.url,
    ...(sd === undefined ? {} : { sourceDescription: norm(sd) }),
    capabilityLists: c.capabilityLists,
    documents: c.documents,
    issues: c.issues,
    sampled: c.sampled,
    resources: c.resources,
    linkHeaders: c.linkHeaders,
    errors,
    warnings: c.issues.length - errors,
    conformant: errors === 0,
    notes: discovery.notes,
  };
}
