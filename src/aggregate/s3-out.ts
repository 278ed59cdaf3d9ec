/**
 * An aggregate in an S3 bucket (`out: s3://bucket/prefix`): the copies of Source `<id>` under `<prefix>/<id>/`
 * (`createS3Storage`, as `sync … s3://…` keeps a mirror), the published documents under `<prefix>/` (the S3
 * `DocumentSink`: `.well-known/resourcesync`, `.resourcesync/<id>/…`), so that the bucket behind a web server or a
 * CDN at `base-url` is the aggregate. The copies are no folder to walk: each Source's set is published from its
 * Destination state (the inventory), each copy at `<base-url><id>/<path>` with the original's `lastmod`, digests,
 * length and type, and its `via` link.
 * The endpoint comes from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (else AWS S3), the region from `AWS_REGION`,
 * the credentials from the SDK's chain (`AWS_ACCESS_KEY_ID`, …).
 * @see Z39.99 §14.8; docs/aggregate.md
 */
import { join } from 'node:path';
import type { FeedRecord } from '../core/feed-record.js';
import { formatHashes } from '../core/hash.js';
import type { Ln } from '../core/model/types.js';
import { createS3Storage, type S3Storage } from '../destination/s3-storage.js';
import type { ResourceRecord } from '../destination/state.js';
import type { InventoryFeed } from '../source/inventory-feed.js';
import { createS3Documents, type S3Documents } from '../source/s3-documents.js';
import { pathToUrl } from '../source/url-path.js';
import type { AggregateConfig, AggregateSource } from './config.js';
import type { AggregateStateEngine } from './engines.js';

/** The bucket of an aggregate. */
export type AggregateBucket = NonNullable<AggregateConfig['s3']>;

/** Where the S3 server is, from the environment. */
function endpointOf(env: Record<string, string | undefined>): { endpoint?: string; region?: string } {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
  return { ...(endpoint === undefined ? {} : { endpoint }), ...(region === undefined ? {} : { region }) };
}

/** The prefix of a Source's copies in the bucket. */
function sourcePrefix(bucket: AggregateBucket, id: string): string {
  return bucket.prefix === '' ? id : `${bucket.prefix}/${id}`;
}

/** The mirror of a Source in the bucket; its large bodies staged under `<work>/sources/<id>/staging/`. */
export function sourceStorage(bucket: AggregateBucket, work: string, id: string, env: Record<string, string | undefined>): S3Storage {
  return createS3Storage({ bucket: bucket.bucket, prefix: sourcePrefix(bucket, id), tempDir: join(work, 'sources', id, 'staging'), ...endpointOf(env) });
}

/** The sink of the aggregate's documents, at the bucket's prefix. */
export function documentSink(bucket: AggregateBucket, env: Record<string, string | undefined>): S3Documents {
  return createS3Documents({ bucket: bucket.bucket, prefix: bucket.prefix, ...endpointOf(env) });
}

/** A Source's set as a feed of its Destination state, and the `via` link of each of its copies by URL. */
export interface StateInventory {
  feed: InventoryFeed;
  /** The `via` link of the copy at `loc` (known once the feed was read). */
  via(loc: string): Ln[] | undefined;
}

/**
 * The copies a Source's state holds, as the records of its set in the aggregate at `baseUrl`: each at
 * `<baseUrl><id>/<path>`, with the original's lastmod, digests, length and type.
 */
export function stateInventory(engine: AggregateStateEngine, source: Pick<AggregateSource, 'id' | 'capabilitySets'>, baseUrl: string): StateInventory {
  const links = new Map<string, Ln[]>();
  const setBase = `${baseUrl}${source.id}/`;
  const feed: InventoryFeed = {
    location: `the state of '${source.id}' (${engine.shown})`,
    records: async function* () {
      links.clear();
      let line = 0;
      const sets = source.capabilitySets === undefined ? [undefined] : source.capabilitySets.map((_, i) => i);
      for (const set of sets) {
        const state = await engine.openState(source, set, { readonly: true });
        try {
          for await (const r of state.records()) {
            const loc = pathToUrl(setBase, r.path);
            links.set(loc, viaOf(r));
            yield { line: ++line, record: feedRecordOf(loc, r) };
          }
        } finally {
          await state.close();
        }
      }
    },
  };
  return { feed, via: (loc) => links.get(loc) };
}

function feedRecordOf(loc: string, r: ResourceRecord): FeedRecord {
  const lastmod = r.lastmod === undefined ? Number.NaN : Date.parse(r.lastmod);
  return {
    loc,
    deleted: false,
    length: r.length,
    hashes: r.hashes,
    ...(Number.isFinite(lastmod) ? { lastmod } : {}),
    ...(r.type === undefined ? {} : { type: r.type }),
  };
}

/** The `via` link of a copy: the one its Source gave (a chain keeps the origin), else one to the original. */
function viaOf(r: ResourceRecord): Ln[] {
  const kept = r.links?.filter((l) => l.rel === 'via');
  if (kept !== undefined && kept.length > 0) return kept.map((l) => ({ ...l }));
  const ln: Ln = { rel: 'via', href: r.url };
  if (r.lastmod !== undefined) ln.modified = r.lastmod;
  const hash = formatHashes(r.hashes);
  if (hash !== '') ln.hash = hash;
  ln.length = String(r.length);
  if (r.type !== undefined) ln.type = r.type;
  return [ln];
}
