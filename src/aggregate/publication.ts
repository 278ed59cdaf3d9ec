/**
 * The aggregate republished as a Source (Z39.99 §14.8): each aggregated Source's mirror is a set of the aggregate
 * (one Capability List each, under `<base-url><id>/`), published by the Source library with the `via` link of each
 * copy taken from the Destination state, and served by the Source server. Publications run one at a time; asking
 * for one while one runs makes exactly one more run after it. The changes a sync applied are recorded in the order
 * it applied them (`recordChanges` in the given order) before the publication's scan records whatever else changed.
 * @see Z39.99 §12.1 (a Change List in forward chronological order), §11.1 and §13.1 (the dumps, with `dumps`)
 * @see Z39.99 §5 (Source Description), §9 (Capability List), §14.8 (provenance)
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Ln } from '../core/model/types.js';
import type { ResponderHandler, ResponderResponse } from '../server/request-response.js';
import { createSourceResponder, type SourceResponder } from '../server/source-responder.js';
import { publish, type PublishOptions, type PublishResult } from '../source/publish.js';
import { recordChanges } from '../source/record-changes.js';
import type { SetNotifications } from '../source/notifications.js';
import type { AggregateSource } from './config.js';
import { MAX_APPLIED, mirrorDir, openViaLinks, type ViaLinks } from './source-mirror.js';
import type { AggregateStateEngine } from './engines.js';
import type { DocumentSink } from '../source/document-sink.js';
import { stateInventory, type StateInventory } from './s3-out.js';

/** Where the published documents of an aggregate go, under its `out` folder. */
const PUBLISH_DIR = 'publish';

const UNAVAILABLE: ResponderResponse = {
  status: 503,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5', 'content-length': '41' },
  body: { type: 'bytes', bytes: Buffer.from('503 no Source of the aggregate is synced\n') },
};

const IN_BUCKET: ResponderResponse = {
  status: 404,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': '61' },
  body: { type: 'bytes', bytes: Buffer.from('404 the aggregate is served from its bucket, at its base-url\n') },
};

/** Where the aggregate's notifications go (its embedded hub, `../live/push.ts`). */
export interface AggregatePush {
  hubUrl: string;
  /** Queues notifications for the hub, sent in order. */
  send(notifications: readonly SetNotifications[] | undefined): void;
}

/** The published aggregate and the handler that serves it. */
export class AggregatePublication {
  readonly #out: string;
  #baseUrl: string;
  #responder: SourceResponder | undefined;
  #servedSets = '';
  #running: Promise<void> | undefined;
  #again = false;
  /** The Sources to publish in the next run: those whose mirror changed, or all of them. */
  #dirty: Set<string> | 'all' = 'all';
  readonly #sources: () => readonly AggregateSource[];
  readonly #onPublished: (r: { result: PublishResult | undefined; ms: number }) => void;
  readonly #onError: (error: unknown) => void;
  readonly #push: AggregatePush | undefined;
  readonly #publishing: () => Pick<PublishOptions, 'dumps' | 'changeList'>;
  /** The mirror paths each Source's syncs changed since its last publication, in the order applied. */
  readonly #applied = new Map<string, string[]>();
  readonly #engine: AggregateStateEngine | undefined;
  readonly #sink: DocumentSink | undefined;

  constructor(options: {
    out: string;
    baseUrl: string;
    /** The Sources to publish (those with a mirror are). */
    sources: () => readonly AggregateSource[];
    onPublished: (r: { result: PublishResult | undefined; ms: number }) => void;
    onError: (error: unknown) => void;
    /** Announces each publication's changes (Change Notifications, with the `via` links) and framework changes. */
    push?: AggregatePush;
    /** The dumps each set offers and when its Change Lists close (`publish`'s options), read at each publication. */
    publishing?: () => Pick<PublishOptions, 'dumps' | 'changeList'>;
    /** Where the Destination states and the snapshots are (PostgreSQL); default SQLite files under `out`. */
    engine?: AggregateStateEngine;
    /**
     * The bucket the documents go to (`out: s3://…`, with an `engine`): each Source's set is then published from
     * its Destination state (the copies are in the bucket, no folder), every set at each run; nothing is served here.
     */
    sink?: DocumentSink;
  }) {
    this.#push = options.push;
    this.#publishing = options.publishing ?? (() => ({}));
    this.#engine = options.engine;
    this.#sink = options.sink;
    this.#out = options.out;
    this.#baseUrl = options.baseUrl;
    this.#sources = options.sources;
    this.#onPublished = options.onPublished;
    this.#onError = options.onError;
  }

  /** Serves the aggregate: 503 until a Source is published; 404 when the bucket serves it. */
  readonly handler: ResponderHandler = (req) => (this.#sink !== undefined ? IN_BUCKET : this.#responder === undefined ? UNAVAILABLE : this.#responder(req));

  /** Publishes under another base URL from now on (every document is written again). */
  set baseUrl(url: string) {
    this.#baseUrl = url;
    this.#servedSets = '';
    this.#dirty = 'all';
  }

  /**
   * Asks for a publication of the Sources `ids` (whose mirrors changed; none: only the Source Description, for a
   * Source gone) or of `'all'`; resolves once a run that started after this call has ended (failed ones included).
   * `applied` gives, by Source, the mirror paths a sync changed in the order it applied them: the Change List
   * records them in that order (the other changes follow, in path order).
   */
  request(ids: readonly string[] | 'all', applied?: Readonly<Record<string, readonly string[] | undefined>>): Promise<void> {
    for (const [id, paths] of Object.entries(applied ?? {})) {
      const list = this.#applied.get(id) ?? [];
      for (const p of paths ?? []) if (list.length < MAX_APPLIED) list.push(p);
      if (list.length > 0) this.#applied.set(id, list);
    }
    // the mirrors changed: the copies are served as they are now (the responder keeps small files for a second),
    // also to a Destination that a Change Notification sends for them before this publication ends
    this.#responder?.invalidate();
    if (ids === 'all') this.#dirty = 'all';
    else if (this.#dirty !== 'all') for (const id of ids) this.#dirty.add(id);
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    const run = (async () => {
      do {
        this.#again = false;
        await this.#publishNow().catch((error: unknown) => {
          this.#dirty = 'all'; // the next run publishes everything again
          this.#onError(error);
        });
      } while (this.#again);
    })().finally(() => {
      this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  /** Resolves once no publication runs. */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #publishNow(): Promise<void> {
    if (this.#sink !== undefined && this.#engine !== undefined) return this.#publishToBucket(this.#sink, this.#engine);
    const started = performance.now();
    const sources = [...this.#sources()].filter((s) => existsDir(mirrorDir(this.#out, s.id))).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (sources.length === 0) {
      this.#responder = undefined;
      this.#servedSets = '';
      this.#onPublished({ result: undefined, ms: Math.round(performance.now() - started) });
      return;
    }
    const dirty = this.#dirty;
    this.#dirty = new Set();
    const ids = new Set(sources.map((s) => s.id));
    for (const id of this.#applied.keys()) if (!ids.has(id)) this.#applied.delete(id); // a Source gone
    const only = dirty === 'all' ? undefined : sources.filter((s) => dirty.has(s.id)).map((s) => s.id);
    const vias = new Map<string, ViaLinks>();
    let linksOf: string | undefined;
    const push = this.#push;
    const options: PublishOptions = {
      sets: sources.map((s) => ({ name: s.id, dir: mirrorDir(this.#out, s.id) })),
      ...this.#common(),
      ...(this.#engine === undefined ? {} : { snapshots: this.#engine.snapshots }),
      ...this.#publishing(),
      resourceLinks: (set, path, entry): Ln[] | undefined => {
        // the states of one set at a time are open (sets are written one after the other)
        if (set !== linksOf) vias.get(linksOf ?? '')?.release();
        linksOf = set;
        return vias.get(set)?.links(path, entry);
      },
    };
    let result: PublishResult;
    try {
      for (const s of sources) if (only === undefined || only.includes(s.id)) vias.set(s.id, await openViaLinks(this.#out, s, this.#engine));
      const recorded = { created: 0, updated: 0, deleted: 0 };
      for (const set of options.sets) if (only === undefined || only.includes(set.name)) await this.#recordApplied(options, set as { name: string; dir: string }, recorded);
      result = await publish({ ...options, ...(only === undefined ? {} : { only }) });
      for (const k of ['created', 'updated', 'deleted'] as const) result.changes[k] += recorded[k];
    } finally {
      for (const v of vias.values()) await v.close();
    }
    this.#serve(sources, result);
    push?.send(result.notifications?.map((n) => ({ ...n, change: [] }))); // the Framework Notifications
    this.#onPublished({ result, ms: Math.round(performance.now() - started) });
  }

  /**
   * Records the changes a Source's syncs applied, in the order applied, before the publication's scan (which
   * records the others in path order). Nothing when the set was never published with these options (the scan
   * takes it in whole).
   * @see Z39.99 §12.1
   */
  async #recordApplied(options: PublishOptions, set: { name: string; dir: string }, into: PublishResult['changes']): Promise<void> {
    const paths = this.#applied.get(set.name);
    this.#applied.delete(set.name);
    if (paths === undefined || paths.length === 0) return;
    const files = paths.map((p) => join(set.dir, ...p.split('/')));
    const { changes } = await recordChanges({ ...options, sets: [set] }, files, { order: 'given' });
    for (const k of ['created', 'updated', 'deleted'] as const) into[k] += changes[k];
  }

  /** Publishes every Source's set from its state into the bucket (the copies are there already). */
  async #publishToBucket(sink: DocumentSink, engine: AggregateStateEngine): Promise<void> {
    const started = performance.now();
    const sources = [...this.#sources()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.#dirty = new Set();
    this.#applied.clear(); // recorded by the scan of the states, in their order
    if (sources.length === 0) {
      this.#onPublished({ result: undefined, ms: Math.round(performance.now() - started) });
      return;
    }
    const inventories = new Map<string, StateInventory>(sources.map((s) => [s.id, stateInventory(engine, s, this.#baseUrl)]));
    const push = this.#push;
    const result = await publish({
      sets: sources.map((s) => ({ name: s.id, feed: inventories.get(s.id)!.feed })),
      ...this.#common(),
      snapshots: engine.snapshots,
      sink,
      resourceLinks: (set, loc): Ln[] | undefined => inventories.get(set)?.via(loc),
    });
    push?.send(result.notifications?.map((n) => ({ ...n, change: [] })));
    this.#onPublished({ result, ms: Math.round(performance.now() - started) });
  }

  /**
   * What every publication shares: where it writes, and how its changes are announced. Change Notifications go out
   * as the changes are recorded (their entries carry the `via` links too), the served documents told to look again.
   */
  #common(): Pick<PublishOptions, 'baseUrl' | 'outDir' | 'stateDir' | 'namedSets' | 'notifications' | 'onRecorded'> {
    const push = this.#push;
    return {
      baseUrl: this.#baseUrl,
      outDir: join(this.#out, PUBLISH_DIR),
      stateDir: join(this.#out, 'sources'),
      namedSets: true,
      ...(push === undefined
        ? {}
        : {
            notifications: { hub: push.hubUrl },
            onRecorded: (n: SetNotifications) => {
              this.#responder?.invalidate();
              push.send([n]);
            },
          }),
    };
  }

  /** Serves the sets just published: a new responder when they changed, else the old one told to look again. */
  #serve(sources: AggregateSource[], result: PublishResult): void {
    const key = JSON.stringify([this.#baseUrl, sources.map((s) => s.id)]);
    if (this.#responder !== undefined && key === this.#servedSets) {
      this.#responder.invalidate();
      return;
    }
    this.#responder = createSourceResponder({
      sets: sources.map((s, i) => ({ name: s.id, dir: mirrorDir(this.#out, s.id), capabilityList: result.capabilityLists[i]! })),
      outDir: join(this.#out, PUBLISH_DIR),
      baseUrl: this.#baseUrl,
      namedSets: true,
      onError: this.#onError,
    });
    this.#servedSets = key;
  }
}

function existsDir(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
