/**
 * The OAI-PMH bridge: an OAI-PMH 2.0 repository published as a ResourceSync Source. Each record in each chosen
 * metadata format is a resource whose bytes are the record's metadata as a standalone XML document, served by the
 * bridge (never the repository's `GetRecord` URL: its answer carries `responseDate`, so its bytes, hash and length
 * change on every request and no Destination could verify them). The records are harvested into a folder, one
 * file each, which the Source publishes: a full harvest gives the Resource List, incremental harvests `from` the
 * previous one's start (the repository's clock, at its granularity, with an overlap) the Change Lists, where a
 * record changed, created or deleted (`status="deleted"`, or missing from a full harvest) is recorded once.
 * @see Z39.99 §10 (Resource List), §12 (Change List); OAI-PMH 2.0 §2.5, §2.7, §4
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { isValidSetName } from '../source/url-path.js';
import { createOaiClient, type OaiClient, type OaiClientOptions } from './client.js';
import { HarvestState } from './harvest-state.js';
import { harvestInto, type BridgeSet, type HarvestCounts } from './harvester.js';
import { isMetadataPrefix } from './record-folder.js';
import { formatDatestamp, parseDatestamp, type OaiIdentify } from './types.js';

/** The name of the single set of resources without `bySets`. */
const OAI_SET_NAME = 'oai';

/** Options of {@link openOaiBridge}. */
export interface OaiBridgeOptions {
  /** The repository's OAI-PMH base URL. */
  repository: string;
  /** The folder of the record files (one sub-folder per set with `bySets`). */
  folder: string;
  /** The bridge's state (harvest bookkeeping; the Source's snapshots below it). Default `<folder>/.oai-pmh`. */
  stateDir?: string;
  /** Metadata formats published. Default `['oai_dc']`. */
  metadataPrefixes?: string[];
  /** One set of resources (one Capability List) per OAI set; records in no set are then not published. Default false. */
  bySets?: boolean;
  /** Harvest with ListIdentifiers and one GetRecord per record, for repositories whose ListRecords fails. */
  listIdentifiers?: boolean;
  /** An incremental harvest starts this long before the previous one started (second granularity). Default 60,000 ms. */
  overlapMs?: number;
  /** A full harvest (deletions in a repository that keeps none) runs when the last is this old. Default 24 h. */
  fullEveryMs?: number;
  /** The OAI-PMH client's limits and HTTP effect. */
  client?: Omit<OaiClientOptions, 'baseUrl' | 'signal'>;
  signal?: AbortSignal;
  /** Records left out (an identifier too long to name a file), progress of long harvests, list restarts. */
  onEvent?: (event: OaiBridgeEvent) => void;
}

/** What a bridge reports while it harvests. */
export type OaiBridgeEvent =
  | { type: 'skipped'; set: string; identifier: string; reason: string }
  | { type: 'progress'; counts: HarvestCounts }
  | { type: 'restart'; verb: string; restarts: number };

/** One harvest. */
export interface HarvestReport {
  /** True for a full harvest (no `from`). */
  full: boolean;
  /** The `from` of an incremental harvest. */
  from?: string;
  /** When it started, by the repository's clock (its Identify's `responseDate`), ms. */
  startedAt: number;
  counts: HarvestCounts;
  /** The record files an incremental harvest wrote or removed, when at most 10,000 (else undefined). */
  changedFiles?: string[];
}

/** An open bridge: its sets of resources and its harvests. */
export interface OaiBridge {
  /** The repository as Identify described it. */
  readonly identify: OaiIdentify;
  /** The sets of resources to publish, each with its folder. */
  readonly sets: BridgeSet[];
  /** The bridge's state folder. */
  readonly stateDir: string;
  /** Harvests (in full when asked, when none was, or when the last full one is older than `fullEveryMs`). */
  harvest(options?: { full?: boolean }): Promise<HarvestReport>;
  close(): Promise<void>;
}

/** Set names from setSpecs (sorted): characters a URL segment cannot hold become `-`; duplicates get a suffix. */
function setNamesOf(specs: readonly string[]): Map<string, string> {
  const names = new Map<string, string>();
  const used = new Set<string>();
  for (const spec of [...specs].sort()) {
    let name = spec.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.]+/, '').slice(0, 90);
    if (!isValidSetName(name)) name = 'set';
    const base = name;
    for (let k = 2; used.has(name); k++) name = `${base}-${k}`;
    used.add(name);
    names.set(spec, name);
  }
  return names;
}

/**
 * Opens a bridge: asks the repository who it is (Identify), checks the metadata formats, lists its sets with
 * `bySets`, and opens the harvest state. When the repository cannot be reached, what an earlier run learned is
 * used, so that a Source restarted while its repository is down still serves what it published.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT (a format the repository does not disseminate, a bad prefix), what the client throws on a first run
 * @example
 * const bridge = await openOaiBridge({ repository: 'https://repo.example/oai', folder: '/srv/oai' });
 * const report = await bridge.harvest();
 */
export async function openOaiBridge(options: OaiBridgeOptions): Promise<OaiBridge> {
  const prefixes = options.metadataPrefixes ?? ['oai_dc'];
  for (const p of prefixes) {
    if (!isMetadataPrefix(p)) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${p}' is not a metadataPrefix (OAI-PMH 2.0 §3.4).`, { data: { metadataPrefix: p } });
  }
  const folder = resolve(options.folder);
  const stateDir = resolve(options.stateDir ?? join(folder, '.oai-pmh'));
  await mkdir(stateDir, { recursive: true });
  const state = new HarvestState(join(stateDir, 'harvest.sqlite'));
  const client = createOaiClient({
    ...options.client,
    baseUrl: options.repository,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onRestart: (e) => options.onEvent?.({ type: 'restart', verb: e.verb, restarts: e.restarts }),
  });
  try {
    const { identify, setSpecs } = await describe(client, state, prefixes, options.bySets === true);
    const names = setNamesOf(setSpecs);
    const sets: BridgeSet[] =
      options.bySets === true
        ? setSpecs.map((spec) => ({ name: names.get(spec)!, dir: join(folder, names.get(spec)!), setSpec: spec }))
        : [{ name: OAI_SET_NAME, dir: folder }];
    for (const s of sets) await mkdir(s.dir, { recursive: true });
    return new Bridge(options, client, state, identify, sets, prefixes, stateDir);
  } catch (error) {
    state.close();
    await client.close();
    throw error;
  }
}

/** The repository's Identify and sets, checked against the formats; remembered for a run while it is down. */
async function describe(client: OaiClient, state: HarvestState, prefixes: string[], bySets: boolean): Promise<{ identify: OaiIdentify; setSpecs: string[] }> {
  let identify: OaiIdentify;
  try {
    identify = await client.identify();
  } catch (error) {
    const known = state.get('repository');
    if (known === undefined) throw error;
    return JSON.parse(known) as { identify: OaiIdentify; setSpecs: string[] };
  }
  const formats = await client.listMetadataFormats();
  const offered = formats.map((f) => f.metadataPrefix);
  const missing = prefixes.filter((p) => !offered.includes(p));
  if (missing.length > 0) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The repository does not disseminate ${missing.map((m) => `'${m}'`).join(', ')} (it offers ${offered.join(', ') || 'none'}).`, {
      data: { missing, offered },
    });
  }
  const setSpecs: string[] = [];
  if (bySets) for await (const s of client.listSets()) if (setSpecs.length < 10_000) setSpecs.push(s.setSpec);
  const known = { identify, setSpecs };
  state.set('repository', JSON.stringify(known));
  return known;
}

class Bridge implements OaiBridge {
  #busy = false;

  constructor(
    private readonly options: OaiBridgeOptions,
    private readonly client: OaiClient,
    private readonly state: HarvestState,
    readonly identify: OaiIdentify,
    readonly sets: BridgeSet[],
    private readonly prefixes: string[],
    readonly stateDir: string,
  ) {}

  async harvest(asked: { full?: boolean } = {}): Promise<HarvestReport> {
    if (this.#busy) throw new ResourceSyncError('RS_LOCKED', 'A harvest is already running.', { data: {} });
    this.#busy = true;
    try {
      return await this.#harvest(asked.full === true);
    } finally {
      this.#busy = false;
    }
  }

  async #harvest(askedFull: boolean): Promise<HarvestReport> {
    const { state, options } = this;
    // the repository's clock, at the start of this harvest: the next incremental harvest starts there
    const now = await this.client.identify();
    const startedAt = parseDatestamp(now.responseDate ?? '') ?? Date.now();
    const last = Number(state.get('lastHarvest') ?? NaN);
    const lastFull = Number(state.get('lastFullHarvest') ?? NaN);
    const full = askedFull || Number.isNaN(last) || Number.isNaN(lastFull) || startedAt - lastFull >= (options.fullEveryMs ?? 86_400_000);
    const granularity = now.granularity;
    // at day granularity the day of the last start is harvested again whole: the overlap is that day
    const from = full ? undefined : formatDatestamp(granularity === 'YYYY-MM-DD' ? last : last - (options.overlapMs ?? 60_000), granularity);
    const previousGeneration = Number(state.get('generation') ?? 0);
    const generation = full ? previousGeneration + 1 : previousGeneration;
    const { changedFiles, ...counts } = await harvestInto({
      client: this.client,
      state,
      sets: this.sets,
      metadataPrefixes: this.prefixes,
      ...(from === undefined ? {} : { from }),
      generation,
      ...(options.listIdentifiers === true ? { listIdentifiers: true } : {}),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      onSkip: (e) => options.onEvent?.({ type: 'skipped', ...e }),
      onProgress: (c) => options.onEvent?.({ type: 'progress', counts: c }),
    });
    state.set('lastHarvest', String(startedAt));
    if (full) {
      state.set('lastFullHarvest', String(startedAt));
      state.set('generation', String(generation));
    }
    return { full, ...(from === undefined ? {} : { from }), startedAt, counts, ...(changedFiles === undefined ? {} : { changedFiles }) };
  }

  async close(): Promise<void> {
    this.state.close();
    await this.client.close();
  }
}
