/**
 * The bridge as a Source: once (`publishOaiRepository`: harvest, then write the documents beside the record files,
 * for a web server of one's own, like `build`), or as a service (`startOaiSource`: a live Source that serves the
 * records and documents with discovery and push, like `serve`, and harvests every interval). A harvest that fails
 * (the repository down, an error mid-list) leaves what was published served; the next attempt comes after a
 * backoff that doubles up to an hour.
 * @see Z39.99 §6.3 (discovery), §10, §12; Change Notification §4
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { publish, type PublishResult } from '../source/publish.js';
import { createLiveSource, type LivePublishOptions, type LivePushOptions, type LiveSource, type LiveSourceEvent } from '../live/live-source.js';
import { openOaiBridge, type HarvestReport, type OaiBridge, type OaiBridgeOptions } from './bridge.js';

/** Options of {@link publishOaiRepository}. */
export interface PublishOaiOptions extends Omit<OaiBridgeOptions, 'folder'> {
  /** The folder served at `baseUrl`: record files and documents. */
  outDir: string;
  /** Where `outDir` is served. */
  baseUrl: string;
  /** Harvest in full (and remove what a full harvest does not see). Default: as `fullEveryMs` says. */
  full?: boolean;
  /** Publication options (hashes, list sizes, dumps, gzip…). */
  publish?: LivePublishOptions;
}

/**
 * Harvests the repository into `outDir` and writes the Source's documents there; each run records the changes
 * since the previous one.
 * @example
 * const { harvest, published } = await publishOaiRepository({ repository: 'https://repo.example/oai', outDir: '/var/www/oai', baseUrl: 'https://example.org/oai/' });
 */
export async function publishOaiRepository(options: PublishOaiOptions): Promise<{ harvest: HarvestReport; published: PublishResult }> {
  const bridge = await openOaiBridge({ ...options, folder: options.outDir });
  try {
    const harvest = await bridge.harvest(options.full === undefined ? {} : { full: options.full });
    const published = await publish({
      ...options.publish,
      sets: bridge.sets.map((s) => ({ name: s.name, dir: s.dir })),
      baseUrl: options.baseUrl,
      outDir: options.outDir,
      stateDir: join(bridge.stateDir, 'source'),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    return { harvest, published };
  } finally {
    await bridge.close();
  }
}

/** Options of {@link startOaiSource}. */
export interface OaiSourceOptions extends OaiBridgeOptions {
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Public base URL. Default: the listening URL. */
  baseUrl?: string;
  /** Time between harvests, in ms. Default 300,000 (five minutes). */
  intervalMs?: number;
  publish?: LivePublishOptions;
  push?: LivePushOptions;
  explorer?: boolean;
  /** What happens: the live Source's events, harvests and their failures. */
  onEvent?: (event: OaiSourceEvent) => void;
}

/** What the service reports. */
export type OaiSourceEvent =
  | LiveSourceEvent
  | Parameters<NonNullable<OaiBridgeOptions['onEvent']>>[0]
  | { type: 'harvest'; report: HarvestReport; published: boolean }
  | { type: 'harvest-failed'; error: unknown; retryInMs: number };

/** A running bridge service. */
export interface OaiSource {
  readonly url: string;
  readonly baseUrl: string;
  readonly source: LiveSource;
  readonly bridge: OaiBridge;
  /** Resolves after the first harvest was published (rejects never: a failed one is retried). */
  firstHarvest(): Promise<void>;
  /** Harvests and publishes now (after the one under way). */
  harvestNow(options?: { full?: boolean }): Promise<HarvestReport>;
  close(): Promise<void>;
}

const MAX_BACKOFF_MS = 3_600_000;

/**
 * Starts the bridge as a live Source: listens, publishes what the folder holds, then harvests at once and every
 * `intervalMs`, publishing (and pushing) what changed.
 * @example
 * const oai = await startOaiSource({ repository: 'https://repo.example/oai', folder: '/srv/oai', port: 8080 });
 * console.log(`listening on ${oai.url}`);
 */
export async function startOaiSource(options: OaiSourceOptions): Promise<OaiSource> {
  const emit = options.onEvent ?? (() => undefined);
  // one signal for the harvests and the Source: close() or the caller's signal ends both
  const controller = new AbortController();
  if (options.signal?.aborted === true) controller.abort();
  else options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const signal = controller.signal;
  const bridge = await openOaiBridge({ ...options, signal, onEvent: emit });
  let source: LiveSource;
  try {
    source = await createLiveSource({
      sets: bridge.sets.map((s) => ({ name: s.name, dir: s.dir })),
      ...(options.port === undefined ? {} : { port: options.port }),
      ...(options.host === undefined ? {} : { host: options.host }),
      ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
      stateDir: join(bridge.stateDir, 'source'),
      watch: false,
      ...(options.publish === undefined ? {} : { publish: options.publish }),
      ...(options.push === undefined ? {} : { push: options.push }),
      ...(options.explorer === undefined ? {} : { explorer: options.explorer }),
      signal,
      onEvent: emit,
    });
    await source.ready();
  } catch (error) {
    await bridge.close();
    throw error;
  }
  return new Service(options, controller, bridge, source, emit);
}

class Service implements OaiSource {
  readonly #controller: AbortController;
  #queue: Promise<unknown> = Promise.resolve();
  #first: Promise<void>;
  #loop: Promise<void>;

  constructor(
    private readonly options: OaiSourceOptions,
    controller: AbortController,
    readonly bridge: OaiBridge,
    readonly source: LiveSource,
    private readonly emit: (e: OaiSourceEvent) => void,
  ) {
    this.#controller = controller;
    let firstDone: () => void = () => undefined;
    this.#first = new Promise<void>((r) => (firstDone = r));
    this.#loop = this.#run(firstDone);
    void source.closed.then(() => this.#controller.abort());
  }

  get url(): string {
    return this.source.url;
  }

  get baseUrl(): string {
    return this.source.baseUrl;
  }

  firstHarvest(): Promise<void> {
    return this.#first;
  }

  harvestNow(asked: { full?: boolean } = {}): Promise<HarvestReport> {
    const run = this.#queue.then(async () => {
      const report = await this.bridge.harvest(asked);
      const changed = report.counts.written + report.counts.deleted > 0;
      // an incremental harvest's files are recorded on their own (and pushed at once); a full one rescans
      if (changed) await (report.changedFiles === undefined ? this.source.publishNow() : this.source.publishFiles(report.changedFiles));
      this.emit({ type: 'harvest', report, published: changed });
      return report;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #run(firstDone: () => void): Promise<void> {
    const signal = this.#controller.signal;
    const interval = this.options.intervalMs ?? 300_000;
    let failures = 0;
    while (!signal.aborted) {
      let wait = interval;
      try {
        await this.harvestNow();
        failures = 0;
        firstDone();
      } catch (error) {
        if (signal.aborted) break;
        failures++;
        wait = Math.min(MAX_BACKOFF_MS, Math.max(interval, 1000) * 2 ** Math.min(failures - 1, 20));
        this.emit({ type: 'harvest-failed', error, retryInMs: wait });
      }
      await sleep(wait, undefined, { signal }).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.#controller.abort();
    await this.source.close();
    await this.#loop;
    await this.#queue;
    await this.bridge.close();
  }
}
