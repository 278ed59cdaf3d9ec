/**
 * `<dest>` as `s3://BUCKET/PREFIX` on `sync` (with `--follow`) and `audit` (with `--repair`): the mirror's copies in a
 * bucket of an S3-compatible server ({@link createS3Storage}), its state where `--state` says (PostgreSQL or an SQLite
 * file: the bucket holds only the copies). The endpoint is `--s3-endpoint`, else `AWS_ENDPOINT_URL_S3` or
 * `AWS_ENDPOINT_URL`, else AWS S3; credentials and region come from the standard AWS variables through the SDK. The
 * library still wants a local folder as `dest` (a first run's undo, the lease's label): the command gives it a
 * temporary one, removed when it is done.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createS3Storage, type S3Storage } from '../destination/s3-storage.js';
import { parseS3Url } from '../node/s3-url.js';
import type { StateChoice } from './state-option.js';

/** The command-line option of this module. */
export const S3_OPTIONS = {
  's3-endpoint': { type: 'string' },
} as const;

/** Its lines in a command's help. */
export const S3_HELP = `  --s3-endpoint URL        with an s3://BUCKET/PREFIX destination: the S3-compatible server
                           (default: AWS_ENDPOINT_URL, else AWS S3; path-style addressing with
                           an endpoint); credentials and region from AWS_ACCESS_KEY_ID,
                           AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN, AWS_PROFILE) and AWS_REGION.
                           The bucket must exist; the state goes where --state says`;

/** A destination in a bucket, as the command line names it (nothing opened yet). */
export interface S3Target {
  bucket: string;
  prefix: string;
  /** undefined: AWS S3. */
  endpoint: string | undefined;
  region: string | undefined;
}

/** A destination in a bucket, opened: its storage, the local folder the library is given as `dest`, and how to let both go. */
export interface OpenedS3 {
  storage: S3Storage;
  /** The URL to report as the destination: `s3://bucket/prefix`. */
  location: string;
  workDir: string;
  close(): Promise<void>;
}

/** Silences the warning the SDK line the package pins prints on every run (later lines will need Node 22): not the user's concern. */
export function quietSdk(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

/**
 * The bucket `dest` names, or undefined for a folder; throws a usage message for a malformed one (the rules of
 * {@link parseS3Url}), for an S3 destination without `--state`, and for `--s3-endpoint` without an S3 destination.
 */
export function s3Target(dest: string, flags: { 's3-endpoint'?: string | undefined }, state: StateChoice, env: NodeJS.ProcessEnv = process.env): S3Target | undefined {
  const place = parseS3Url(dest);
  if (place === undefined) {
    if (flags['s3-endpoint'] !== undefined) throw new Error('--s3-endpoint goes with an s3://BUCKET/PREFIX destination');
    return undefined;
  }
  const { bucket, prefix } = place;
  if (state.kind === 'default') {
    throw new Error(`an s3:// destination keeps its state elsewhere: add --state postgres://USER@HOST/DB or --state FILE (an SQLite file)`);
  }
  const endpoint = flags['s3-endpoint'] ?? (env.AWS_ENDPOINT_URL_S3 || undefined) ?? (env.AWS_ENDPOINT_URL || undefined);
  if (endpoint !== undefined && (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol))) {
    throw new Error(`the S3 endpoint '${endpoint}' is not an http(s) URL`);
  }
  return { bucket, prefix, endpoint, region: env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined };
}

/**
 * Opens the bucket (checked: it exists and the credentials are accepted, else a non-recoverable `RS_IO` naming the
 * bucket and the endpoint) and makes the temporary local folder.
 */
export async function openS3Target(target: S3Target): Promise<OpenedS3> {
  quietSdk();
  const storage = createS3Storage({
    bucket: target.bucket,
    prefix: target.prefix,
    ...(target.endpoint !== undefined ? { endpoint: target.endpoint } : {}),
    ...(target.region !== undefined ? { region: target.region } : {}),
  });
  try {
    await storage.checkBucket();
  } catch (err) {
    storage.close();
    throw err;
  }
  const workDir = await mkdtemp(join(tmpdir(), 'resourcesync-s3-run-'));
  let closed = false;
  return {
    storage,
    location: storage.location,
    workDir,
    close: async () => {
      if (closed) return;
      closed = true;
      await storage.settle();
      storage.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/** What a library call takes for the bucket: the temporary folder as `dest` and the storage; nothing for a folder. */
export function s3Overrides(s3: OpenedS3 | undefined): { dest: string; storage: S3Storage } | Record<string, never> {
  return s3 === undefined ? {} : { dest: s3.workDir, storage: s3.storage };
}
