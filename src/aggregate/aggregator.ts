/**
 * The aggregator: keeps every Source of a configuration in step by polling it at its interval, and serves the
 * aggregate as a Source (see `publication.ts`).
 *
 * Scheduling: a Source is due at its next attempt (`interval` after its last sync, or its `schedule`'s next time);
 * at most `concurrency` Sources sync at once, and at most one per origin (politeness: Sources on one host take
 * turns, each within its own `rate`) unless `origin-rate` paces every request to the origin together. A Source that fails (down,
 * slow past the timeouts, hostile, broken) waits `min(max-backoff, b·2^(n−1))` seconds after its n-th failure in a
 * row, `b` being its interval capped at 30 s, and never holds a slot longer than its own sync: the others go on.
 * The status of each Source is written to `<out>/aggregate.sqlite` on every change.
 * @see Z39.99 §14.8; docs/aggregate.md
 */
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { originOf } from '../client/authority.js';
import type { PublishOptions } from '../source/publish.js';
import type { AggregateConfig, AggregateSource } from './config.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResponderHandler } from '../server/request-response.js';
import type { Push } from '../live/push.js';
import { AggregatePublication } from './publication.js';
import { syncSource, type SourceSyncResult } from './source-mirror.js';
import { CallbackRouter, startAggregateHub } from './push.js';
import { followable, followByPush, type PushFollowing } from './push-follow.js';
import { openStatusStore, type SourceStatus, type StatusStore } from './status.js';
import { SharedPaces, type OriginPace } from '../client/origin-pace.js';
import { nextCronTime, parseCron } from './cron.js';
import { aggregateKey, postgresStateEngine, type AggregateStateEngine } from './engines.js';
import { documentSink, sourceStorage } from './s3-out.js';
import { copyStatusToPostgres, type PostgresStatusCopy } from './postgres-status.js';
import type { SourceSyncOptions } from './source-mirror.js';
import type { AggregateEvent, Aggregator, AggregatorOptions } from './aggregator-types.js';

export type { AggregateEvent, Aggregator, AggregatorOptions } from './aggregator-types.js';

/** One Source as scheduled. */
interface Slot {
  source: AggregateSource;
  origin: string;
  due: number;
  running: Promise<void> | undefined;
  controller: AbortController | undefined;
  /** Removed or replaced: no further attempt. */
  stopped: boolean;
  /** Followed through the follower (push, or polling until the hub answers). */
  following?: PushFollowing;
  /** `auto`, and the Source advertises no change channel: polled. */
  noChannel?: boolean;
}

/** Starts keeping the configuration's Sources in step: the first attempts at once. */
export function startAggregator(config: AggregateConfig, options: AggregatorOptions): Aggregator {
  return new RunningAggregator(config, options);
}

class RunningAggregator implements Aggregator {
  config: AggregateConfig;
  readonly publication: AggregatePublication;
  readonly #options: AggregatorOptions;
  readonly #status: StatusStore;
  readonly #slots = new Map<string, Slot>();
  /** Sources syncing per origin. */
  readonly #busyOrigins = new Map<string, number>();
  /** The pace every Source on one origin shares (`origin-rate`). */
  #paces: SharedPaces | undefined;
  readonly #now: () => number;
  readonly #emit: (e: AggregateEvent) => void;
  #active = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #push: Push | undefined;
  readonly #callbacks: CallbackRouter | undefined;
  /** Followers of removed or changed Sources, unsubscribing. */
  readonly #stopping = new Map<string, Promise<void>>();
  /** The PostgreSQL database of the states and snapshots (`state`); undefined: SQLite under `out`. */
  readonly #engine: AggregateStateEngine | undefined;
  /** With `state`: the status copied to PostgreSQL. */
  readonly #statusCopy: PostgresStatusCopy | undefined;
  /** With `out: s3://…`: the mirror of a Source in the bucket. */
  readonly #storageFor: SourceSyncOptions['storageFor'];

  constructor(config: AggregateConfig, options: AggregatorOptions) {
    this.config = config;
    this.#engine = config.state === undefined ? undefined : postgresStateEngine(config.state, config.s3?.location ?? config.out);
    if (config.s3 !== undefined && this.#engine === undefined) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `out: ${config.s3.location} keeps the states elsewhere: give state: postgres://… (or --state).`);
    }
    const bucket = config.s3;
    this.#storageFor = bucket === undefined ? undefined : (id) => sourceStorage(bucket, config.out, id, options.env);
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#emit = options.onEvent ?? (() => undefined);
    this.#status = openStatusStore(config.out);
    this.#paces = config.originRate === undefined ? undefined : new SharedPaces(config.originRate);
    if (config.state !== undefined) {
      // the status is copied to the database too: `aggregate status` reads it from any machine
      const local = this.#status;
      const copy = copyStatusToPostgres(config.state, aggregateKey(config), (error) => this.#emit({ type: 'status-not-copied', error }));
      this.#statusCopy = copy;
      this.#status = { ...local, put: (s) => (local.put(s), copy.put(s)) };
    }
    if (options.origin !== undefined) {
      const baseUrl = config.baseUrl ?? options.defaultBaseUrl;
      const hubStore = this.#engine?.hubStore();
      this.#push = startAggregateHub({ baseUrl, origin: options.origin, out: config.out, allowCallback: config.allowCallback, onEvent: this.#emit, ...(hubStore === undefined ? {} : { hubStore }) });
      this.#callbacks = new CallbackRouter(options.origin, config.callback, (error) => this.#emit({ type: 'hub-error', error }));
    }
    const push = this.#push;
    this.publication = new AggregatePublication({
      out: config.out,
      baseUrl: config.baseUrl ?? options.defaultBaseUrl,
      // a Source is in the aggregate once it has been synced (its mirror then holds what it published)
      sources: () => [...this.#slots.values()].filter((s) => this.#status.get(s.source.id)?.lastSync !== undefined).map((s) => s.source),
      onPublished: ({ result, ms }) => this.#emit({ type: 'published', sources: result?.capabilityLists.length ?? 0, changes: result?.changes, ms }),
      onError: (error) => this.#emit({ type: 'publish-failed', error }),
      ...(push === undefined ? {} : { push }),
      publishing: () => publishingOptions(this.config),
      ...(this.#engine === undefined ? {} : { engine: this.#engine }),
      ...(bucket === undefined ? {} : { sink: documentSink(bucket, options.env) }),
    });
    const known = new Set(config.sources.map((s) => s.id));
    for (const s of this.#status.all()) if (!known.has(s.id) && s.state !== 'stopped') this.#status.put(stopped(s));
    for (const source of config.sources) this.#add(source);
    void this.publication.request('all'); // what the mirrors hold from before is served at once
    this.#pump();
  }

  reload(config: AggregateConfig): void {
    if (this.#closed) return;
    if (config.out !== this.config.out) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `out cannot change while the aggregator runs ('${this.config.out}' → '${config.out}'): restart it.`, { data: { out: config.out } });
    }
    if (config.state !== this.config.state || config.s3?.location !== this.config.s3?.location) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'state and an s3:// out cannot change while the aggregator runs: restart it.');
    const before = new Map(this.config.sources.map((s) => [s.id, s]));
    const after = new Map(config.sources.map((s) => [s.id, s]));
    const added = [...after.keys()].filter((id) => !before.has(id));
    const removed = [...before.keys()].filter((id) => !after.has(id));
    const changed = [...after.keys()].filter((id) => before.has(id) && sameSource(before.get(id)!, after.get(id)!) === false);
    const baseChanged = config.baseUrl !== this.config.baseUrl;
    if (config.originRate !== this.#paces?.rate) this.#paces = config.originRate === undefined ? undefined : new SharedPaces(config.originRate);
    // other dumps: every set's documents are written again (one dump never mixes formats)
    const dumpsChanged = JSON.stringify(config.dumps) !== JSON.stringify(this.config.dumps);
    this.config = config;
    for (const id of [...removed, ...changed]) this.#stop(id);
    for (const id of removed) {
      const s = this.#status.get(id);
      if (s !== undefined) this.#status.put(stopped(s));
    }
    for (const id of [...changed, ...added]) this.#add(after.get(id)!);
    for (const id of after.keys()) {
      const slot = this.#slots.get(id);
      if (slot !== undefined) slot.source = after.get(id)!; // the line may have moved
    }
    if (baseChanged) this.publication.baseUrl = config.baseUrl ?? this.#options.defaultBaseUrl;
    if (dumpsChanged) void this.publication.request('all');
    else if (removed.length > 0 || baseChanged) void this.publication.request([]);
    this.#emit({ type: 'reloaded', added, removed, changed });
    this.#pump();
  }

  readonly handler: ResponderHandler = (req) => this.#push?.topic(req) ?? this.publication.handler(req);

  intercept(req: IncomingMessage, res: ServerResponse): boolean {
    return (this.#push?.intercept(req, res) ?? false) || (this.#callbacks?.intercept(req, res) ?? false);
  }

  syncAll(): void {
    for (const slot of this.#slots.values()) if (slot.following === undefined) slot.due = Math.min(slot.due, this.#now());
    this.#pump();
  }

  status(): SourceStatus[] {
    return this.#status.all();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    const running: Promise<void>[] = [];
    for (const slot of this.#slots.values()) {
      slot.stopped = true;
      slot.controller?.abort();
      if (slot.running !== undefined) running.push(slot.running);
      if (slot.following !== undefined) running.push(slot.following.stop());
    }
    await Promise.all([...running, ...this.#stopping.values()]);
    await this.publication.settled();
    await this.#push?.close();
    this.#status.close();
    await this.#statusCopy?.close();
  }

  #add(source: AggregateSource): void {
    const previous = this.#status.get(source.id);
    const now = this.#now();
    // a failing Source keeps its backoff across restarts; any other is due at once
    const due =
      previous?.state === 'failing' && previous.nextAttempt !== undefined
        ? Math.min(previous.nextAttempt, now + this.#backoffMs(source, previous.failures))
        : // a scheduled Source in step waits for its next time after its last sync (at once when one was missed)
          Math.max(now, source.schedule !== undefined && previous?.lastSync !== undefined ? this.#nextDue(source, previous.lastSync) : now);
    this.#slots.set(source.id, { source, origin: originOf(source.url) ?? source.url, due, running: undefined, controller: undefined, stopped: false });
    this.#status.put({
      totals: { syncs: 0, errors: 0, created: 0, updated: 0, deleted: 0 },
      failures: 0,
      ...previous,
      id: source.id,
      url: source.url,
      mode: 'poll',
      state: previous?.state === 'failing' ? 'failing' : 'waiting',
      nextAttempt: due,
    });
  }

  #stop(id: string): void {
    const slot = this.#slots.get(id);
    if (slot === undefined) return;
    slot.stopped = true;
    slot.controller?.abort();
    if (slot.following !== undefined) {
      // a Source changed and started again subscribes after this one unsubscribed (one callback URL per id)
      const stopping = slot.following.stop().finally(() => {
        if (this.#stopping.get(id) === stopping) this.#stopping.delete(id);
      });
      this.#stopping.set(id, stopping);
    }
    this.#slots.delete(id);
  }

  /** Starts every due Source that a slot and its origin allow, and sets the timer for the next one. */
  #pump(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    const now = this.#now();
    const waiting = [...this.#slots.values()].filter((s) => s.running === undefined && s.following === undefined).sort((a, b) => a.due - b.due);
    let next = Infinity;
    for (const slot of waiting) {
      if (slot.due > now) {
        next = Math.min(next, slot.due);
        continue;
      }
      if (this.#active >= this.config.concurrency) break;
      // one Source per origin at a time, unless the origin's requests are paced together (origin-rate)
      if (this.#paces === undefined && this.#busyOrigins.has(slot.origin)) continue;
      this.#start(slot);
    }
    if (next !== Infinity) this.#timer = setTimeout(() => this.#pump(), Math.min(Math.max(0, next - now), 2 ** 31 - 1));
  }

  #start(slot: Slot): void {
    this.#active++;
    this.#busyOrigins.set(slot.origin, (this.#busyOrigins.get(slot.origin) ?? 0) + 1);
    const controller = new AbortController();
    slot.controller = controller;
    slot.running = this.#attempt(slot, controller.signal).finally(() => {
      this.#active--;
      const busy = (this.#busyOrigins.get(slot.origin) ?? 1) - 1;
      if (busy > 0) this.#busyOrigins.set(slot.origin, busy);
      else this.#busyOrigins.delete(slot.origin);
      slot.running = undefined;
      slot.controller = undefined;
      this.#pump();
    });
  }

  async #attempt(slot: Slot, signal: AbortSignal): Promise<void> {
    const { source } = slot;
    const started = this.#now();
    this.#update(source.id, (s) => ({ ...s, state: 'syncing', lastAttempt: started }));
    const timeout = AbortSignal.timeout(source.timeout * 1000);
    try {
      if (this.#callbacks !== undefined && followable(source) && slot.noChannel !== true) {
        await this.#follow(slot, started, AbortSignal.any([signal, timeout]));
        return;
      }
      const result = await syncSource(this.config.out, source, {
        signal: AbortSignal.any([signal, timeout]),
        ...(this.#engine === undefined ? {} : { engine: this.#engine }),
        ...(this.#storageFor === undefined ? {} : { storageFor: this.#storageFor }),
        env: this.#options.env,
        ...(this.#options.resourceConcurrency === undefined ? {} : { concurrency: this.#options.resourceConcurrency }),
        ...(this.#options.timeoutMs === undefined ? {} : { timeoutMs: this.#options.timeoutMs }),
        ...this.#paced(),
      });
      if (slot.stopped) return;
      slot.due = this.#nextDue(source, this.#now());
      this.#update(source.id, (s) => succeeded(s, started, result, slot.due));
      this.#emit({ type: 'synced', id: source.id, result });
      if (result.created + result.updated + result.deleted > 0 || result.mode === 'baseline' || !this.#published.has(source.id)) {
        this.#published.add(source.id);
        void this.publication.request([source.id], { [source.id]: result.applied });
      }
    } catch (caught) {
      if (slot.stopped) return;
      const error = timeout.aborted
        ? new ResourceSyncError('RS_HTTP_TIMEOUT', `The sync of '${source.id}' took longer than its timeout (${source.timeout} s) and was abandoned.`, { cause: caught, data: { id: source.id, timeout: source.timeout } })
        : caught;
      const failures = (this.#status.get(source.id)?.failures ?? 0) + 1;
      slot.due = this.#now() + this.#backoffMs(source, failures);
      const code = error instanceof ResourceSyncError ? error.code : 'RS_ERROR';
      this.#update(source.id, (s) => ({
        ...s,
        state: 'failing',
        failures,
        totals: { ...s.totals, errors: s.totals.errors + 1 },
        lastError: { code, message: messageOf(error), at: this.#now() },
        nextAttempt: slot.due,
      }));
      this.#emit({ type: 'sync-failed', id: source.id, error, failures, nextAttempt: slot.due });
    }
  }

  /**
   * Follows a Source through the follower: subscribed through its hub (mode push) or polling its Change List
   * until the hub answers (mode poll); no further attempt is scheduled. An `auto` Source that advertises no
   * change channel is polled from then on.
   */
  async #follow(slot: Slot, started: number, signal: AbortSignal): Promise<void> {
    const { source } = slot;
    const id = source.id;
    await this.#stopping.get(id);
    const following = await followByPush(
      this.config.out,
      source,
      {
        env: this.#options.env,
        mount: (suffix) => this.#callbacks!.mount(id + suffix),
        ...(this.#engine === undefined ? {} : { engine: this.#engine }),
        ...(this.#storageFor === undefined ? {} : { storageFor: this.#storageFor }),
        startSignal: signal,
        ...(this.#options.resourceConcurrency === undefined ? {} : { concurrency: this.#options.resourceConcurrency }),
        ...(this.#options.timeoutMs === undefined ? {} : { timeoutMs: this.#options.timeoutMs }),
        ...(this.#options.reconcileMs === undefined ? {} : { reconcileMs: this.#options.reconcileMs }),
        ...this.#paced(),
      },
      {
        onBatch: (result) => {
          if (slot.stopped) return;
          this.#update(id, (s) => ({ ...succeeded(s, this.#now(), result, undefined), mode: slot.following?.mode ?? s.mode }));
          this.#emit({ type: 'synced', id, result });
          if (result.created + result.updated + result.deleted > 0) void this.publication.request([id], { [id]: result.applied });
        },
        onProblem: (error) => this.#emit({ type: 'follow-problem', id, error }),
        onMode: (mode) => {
          this.#update(id, (s) => ({ ...s, mode }));
          this.#emit({ type: 'mode', id, mode });
        },
      },
    );
    if (slot.stopped) {
      await following.stop();
      return;
    }
    const pollOnly = source.mode === 'auto' && !following.channel;
    if (pollOnly) {
      await following.stop();
      slot.noChannel = true;
      slot.due = this.#nextDue(source, this.#now());
    } else {
      slot.following = following;
      slot.due = Infinity;
    }
    const mode = pollOnly ? 'poll' : following.mode;
    this.#update(id, (s) => ({ ...succeeded(s, started, following.first, pollOnly ? slot.due : undefined), mode }));
    this.#emit({ type: 'synced', id, result: following.first });
    this.#published.add(id);
    void this.publication.request([id], { [id]: following.first.applied });
  }

  /** Sources published since the aggregator started (a first sync republishes even when nothing changed). */
  readonly #published = new Set<string>();

  /** When a Source is next due after a success at `after`: its next scheduled time, or `interval` later. */
  #nextDue(source: AggregateSource, after: number): number {
    if (source.schedule === undefined) return after + source.interval * 1000;
    return nextCronTime(parseCron(source.schedule), after) ?? Infinity;
  }

  /** The origin's shared pace, for the options of a sync (none without `origin-rate`). */
  #paced(): { originPace?: (origin: string) => OriginPace } {
    const paces = this.#paces;
    return paces === undefined ? {} : { originPace: (origin) => paces.for(origin) };
  }

  #backoffMs(source: AggregateSource, failures: number): number {
    const base = Math.min(source.interval, 30);
    const seconds = Math.min(this.config.maxBackoff, base * 2 ** Math.min(Math.max(0, failures - 1), 30));
    return Math.round(seconds * 1000 * (1 + Math.random() * 0.1));
  }

  #update(id: string, change: (s: SourceStatus) => SourceStatus): void {
    const s = this.#status.get(id);
    if (s !== undefined) this.#status.put(change(s));
  }
}

function succeeded(s: SourceStatus, started: number, r: SourceSyncResult, due: number | undefined): SourceStatus {
  const { lastError, nextAttempt: _next, ...rest } = s;
  return {
    ...rest,
    ...(lastError === undefined ? {} : { lastError }),
    state: 'waiting',
    lastSync: started,
    lastSyncMode: r.mode,
    resources: r.resources,
    lastRun: { created: r.created, updated: r.updated, deleted: r.deleted, unchanged: r.unchanged, failed: r.failed, durationMs: r.durationMs },
    totals: { ...s.totals, syncs: s.totals.syncs + 1, created: s.totals.created + r.created, updated: s.totals.updated + r.updated, deleted: s.totals.deleted + r.deleted },
    failures: 0,
    ...(due === undefined ? {} : { nextAttempt: due }),
  };
}

/** The configuration's dumps and Change List closing as `publish` takes them. */
function publishingOptions(config: AggregateConfig): Pick<PublishOptions, 'dumps' | 'changeList'> {
  const d = config.dumps;
  return {
    ...(d === undefined ? {} : { dumps: Object.keys(d).length > 0 ? d : true }),
    ...(config.changeList === undefined ? {} : { changeList: config.changeList }),
  };
}

function stopped(s: SourceStatus): SourceStatus {
  const { nextAttempt: _n, ...rest } = s;
  return { ...rest, state: 'stopped' };
}

function sameSource(a: AggregateSource, b: AggregateSource): boolean {
  const { line: _a, ...x } = a;
  const { line: _b, ...y } = b;
  return JSON.stringify(x) === JSON.stringify(y);
}
