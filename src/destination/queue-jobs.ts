/**
 * The jobs of a sync spread over a job queue (pg-boss on PostgreSQL): what a chunk job holds (its run's state as a
 * PostgreSQL URL and destination key, its storage as a folder path or an `s3://` URL, the Source's URL rules, up to
 * 1,000 entries of a Resource List), what a worker reports for it, and the queue both sides open. A job carries no
 * secret but what its state URL holds: credentials for the Source or for S3 come from the worker's environment.
 * @see Z39.99 §5.2 (Baseline Synchronization)
 */
import { createHash } from 'node:crypto';
import { pgConnection, postgresMessage, redactedUrl } from '../node/postgres.js';
import { resolve } from 'node:path';
import type PgBoss from 'pg-boss';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import type { Durability } from '../node/durability.js';
import { durabilityFor } from '../node/durability-for.js';
import { isS3Url, parseS3Url, type S3Target } from '../node/s3-url.js';
import type { ConnectionOptions } from './connection.js';
import { LocalDirectory } from './local-directory.js';
import type { MirrorStorage } from './mirror-storage.js';
import { createS3Storage, type S3Storage } from './s3-storage.js';
import type { ChangeResults } from './resource-applier.js';
import type { AppliedElsewhere } from './sync-counts.js';

/** The pg-boss queue that chunk jobs go through. */
export const CHUNK_QUEUE = 'resourcesync-chunk';
/** The pg-boss schema (its default). */
const SCHEMA = 'pgboss';
/** Most entries one job holds. */
export const MAX_CHUNK = 10_000;

/**
 * Where a run's mirror is, as a job names it: a folder every worker reaches at the same path (a shared file
 * system), or an S3 bucket and prefix (`s3://bucket/prefix`, endpoint and credentials from the worker's environment).
 */
export type StorageDescriptor = { kind: 'folder'; path: string } | { kind: 's3'; url: string };

/** A run's Destination state as a job names it: the PostgreSQL URL and the destination's key there. */
export interface SharedStateName {
  url: string;
  destination: string;
}

/** What a worker needs of the connection to the Source, beyond its own credentials. */
export type JobConnection = Pick<ConnectionOptions, 'source' | 'allowOrigins' | 'maps' | 'base' | 'timeoutMs' | 'retries' | 'rate'>;

/** The format of the chunk jobs this build sends; a worker refuses a job of a format it does not know. */
export const JOB_VERSION = 2;
/** The formats of chunk jobs this build's workers apply (1: a job without `kind`, a Resource List chunk). */
export const JOB_VERSIONS_READ: readonly number[] = [1, 2];

/**
 * One chunk job: up to 1,000 entries of one Resource List (`kind: 'resources'`), or up to 1,000 changes of one
 * Change List, each resource's last change there (`kind: 'changes'`), and everything a worker needs to apply them.
 */
export interface ChunkJob {
  /** The format of this job's data ({@link JOB_VERSION}; 1: no `kind`, a Resource List chunk). */
  version: 1 | 2;
  /**
   * What the entries are: a Resource List's (absent in version 1), or changes of one Change List, at most one per
   * resource (§12: the last change of each resource in the list's order), so the chunks of a list may be applied in
   * any order and at once.
   */
  kind?: 'resources' | 'changes';
  /** The run's id: the same for every chunk of a run, and for the run resumed by the same command. */
  run: string;
  /** The capability set the entries are of: failures are recorded as pending under it. */
  set: string;
  state: SharedStateName;
  storage: StorageDescriptor;
  connection: JobConnection;
  /** Apply deletions; extra attempts after a failed verification; `duplicate` mirrors first; read every file held. */
  behaviour: { delete: boolean; verifyRetries: number; preferMirrors: boolean; rehash: boolean };
  /**
   * The destination held nothing when the run started: a resource a retry finds held was written by an earlier
   * attempt of the same run, and is counted as created, as the attempt that wrote it would have.
   */
  fresh: boolean;
  entries: Entry[];
}

/** What a worker reports for a chunk done (the job's output): for a chunk of changes, what each resource became too. */
export type ChunkOutcome = AppliedElsewhere & { changes?: ChangeResults };

/**
 * The storage a job names for the mirror `dest`: an `s3://` URL as it is (checked), anything else a folder's absolute path.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a malformed `s3://` URL
 */
export function storageDescriptorFor(dest: string): StorageDescriptor {
  if (!isS3Url(dest)) return { kind: 'folder', path: resolve(dest) };
  s3UrlOf(dest);
  return { kind: 's3', url: dest };
}

/** How {@link openStorage} opens a job's storage. */
export interface OpenStorageOptions {
  /** How a folder's files are made durable. Default: a group commit. */
  durability?: Durability;
  /** The S3-compatible server of an `s3://` storage. Default: `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else AWS S3. */
  s3Endpoint?: string;
  /** Where the endpoint and region are read from when not given. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** A storage opened from its descriptor, and how to let it go (an S3 client's connections). */
export interface OpenedStorage {
  storage: MirrorStorage;
  /** The bucket's storage, for an `s3://` descriptor. */
  s3?: S3Storage;
  /** Settles what was written and lets the storage go. */
  close(): Promise<void>;
}

/**
 * The bucket and prefix of a job's `s3://bucket/prefix` storage ({@link parseS3Url}'s rules).
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a URL that is not `s3:` or is malformed
 */
function s3UrlOf(url: string): S3Target {
  const target = parseS3Url(url);
  if (target === undefined) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${url}' is not an s3://BUCKET/PREFIX URL.`, { data: { url } });
  return target;
}

/**
 * Opens the storage a job names: a folder, or a bucket (`s3://bucket/prefix`) on the endpoint of `options` or of
 * the environment, with the credentials and region of the environment (the SDK's chain): a job never carries them.
 * This is the one place a descriptor becomes a storage, for the coordinator and the workers alike.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a kind of storage this build cannot open, or a malformed URL
 */
export function openStorage(descriptor: StorageDescriptor, options: OpenStorageOptions = {}): OpenedStorage {
  switch (descriptor.kind) {
    case 'folder': {
      const storage = new LocalDirectory(descriptor.path, { durability: options.durability ?? durabilityFor() });
      return { storage, close: () => storage.settle() };
    }
    case 's3': {
      const env = options.env ?? process.env;
      const endpoint = options.s3Endpoint ?? (env.AWS_ENDPOINT_URL_S3 || undefined) ?? (env.AWS_ENDPOINT_URL || undefined);
      const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
      const s3 = createS3Storage({ ...s3UrlOf(descriptor.url), ...(endpoint !== undefined ? { endpoint } : {}), ...(region !== undefined ? { region } : {}) });
      const close = async (): Promise<void> => {
        try {
          await s3.settle();
        } finally {
          s3.close();
        }
      };
      return { storage: s3, s3, close };
    }
    default:
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Storage of kind '${String((descriptor as { kind: unknown }).kind)}' cannot be opened by this worker.`, { data: {} });
  }
}

/** The entry as a job holds it: what applying it reads (no line numbers, no foreign elements). */
export function jobEntry(e: Entry): Entry {
  const out: Entry = { loc: e.loc };
  if (e.lastmod !== undefined) out.lastmod = e.lastmod;
  if (e.md !== undefined) out.md = e.md;
  if (e.ln !== undefined) out.ln = e.ln;
  return out;
}

/**
 * A chunk's job id: the same for the same run, set, place and entries, so that a resumed coordinator sends the jobs
 * of the chunks it sent before again under their ids, and the queue keeps the ones it has (done or not). `seq` is the
 * chunk's place: its number among a run's Resource List chunks, or a string naming a chunk of changes (its Change
 * List, its place there, and how many times the same chunk was sent before in this process).
 */
export function chunkId(run: string, set: string, seq: number | string, entries: readonly Entry[]): string {
  const h = createHash('sha256').update(`${run}\n${set}\n${seq}\n`).update(JSON.stringify(entries)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** True when `url` is a PostgreSQL connection URL. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** How {@link openQueue} starts pg-boss. */
export interface OpenQueueOptions {
  /** How often this process looks for expired jobs (among all processes of the queue, once per interval). */
  maintenanceIntervalSeconds: number;
  /** Most connections. Default 4. */
  maxConnections?: number;
  /** Called with errors pg-boss meets in the background (maintenance). */
  onError?: (err: unknown) => void;
}

/** The queue of chunk jobs, started: its schema installed or migrated, the chunk queue created. */
export interface ChunkQueue {
  boss: PgBoss;
  /** Runs SQL on the queue's pool (job states and outputs, read by the coordinator). */
  query<R>(sql: string, values: unknown[]): Promise<R[]>;
  /** The schema's tables. */
  readonly tables: { job: string; archive: string };
  close(): Promise<void>;
}

/**
 * Starts pg-boss on `url` (loaded on first use, not with the package) with the chunk queue created.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a URL that is not PostgreSQL's, RS_IO when the queue cannot be reached
 */
export async function openQueue(url: string, options: OpenQueueOptions): Promise<ChunkQueue> {
  if (!isPostgresUrl(url)) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Queue '${redactedUrl(url)}' is not a postgres:// URL.`, { data: { url: redactedUrl(url) } });
  }
  const { default: PgBossClass } = await import('pg-boss');
  const boss = new PgBossClass({
    ...pgConnection(url),
    schema: SCHEMA,
    max: options.maxConnections ?? 4,
    supervise: true,
    schedule: false,
    migrate: true,
    maintenanceIntervalSeconds: options.maintenanceIntervalSeconds,
  });
  boss.on('error', (err) => options.onError?.(err));
  try {
    await boss.start();
    if ((await boss.getQueue(CHUNK_QUEUE)) === null) await boss.createQueue(CHUNK_QUEUE).catch(() => undefined);
  } catch (err) {
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    throw new ResourceSyncError('RS_IO', `Queue '${redactedUrl(url)}' could not be opened: ${postgresMessage(err)}.`, { cause: err, data: { url: redactedUrl(url) } });
  }
  const db = boss.getDb();
  return {
    boss,
    query: async <R>(sql: string, values: unknown[]) => (await db.executeSql(sql, values)).rows as R[],
    tables: { job: `${SCHEMA}.job`, archive: `${SCHEMA}.archive` },
    close: () => boss.stop({ graceful: true, wait: true, timeout: 5000 }),
  };
}
