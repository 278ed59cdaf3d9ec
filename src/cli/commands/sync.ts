import { stderr, stdout } from 'node:process';
import { sync, type SyncOptions, type SyncReport } from '../../destination/sync.js';
import { mirrorDescribedBy, type DescribedByReport } from '../../destination/described-by.js';
import { openWarcArchive, type WarcArchive, type WarcArchiveOptions, type WarcArchiveSummary } from '../../destination/warc-archive.js';
import { WARC_ARGS, describeWarc, warcChoice } from '../warc-options.js';
import { ProgressBar } from '../progress.js';
import { EXIT, MIRROR_OPTIONS, exitCodeOf, integerOption, mirrorOptions, reportFailure, sourceAndDest, type MirrorOptions } from '../mirror-options.js';
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { follow, type FollowOptions } from '../follow.js';
import { XMPP_PASSWORD_ENV, xmppAccount, type XmppArgs } from '../xmpp-options.js';
import { FsyncEach, RenameOnly, type Durability } from '../../node/durability.js';
import { durabilityFor } from '../../node/durability-for.js';
import type { PlanItem } from '../../destination/plan.js';
import { cliDurability } from '../cli-durability.js';
import { describeDescribedBy, describeSync, lineWriter, planLine } from '../sync-report.js';
import { QUEUE_HELP, QUEUE_OPTIONS, queueChoice, queueSyncOptions, type QueueChoice } from '../queue-options.js';
import { syncWithQueue } from '../../destination/queue-sync.js';
import { STATE_HELP, STATE_OPTIONS, openStateChoice, stateChoice, type OpenedState, type StateChoice } from '../state-option.js';
import { S3_HELP, S3_OPTIONS, openS3Target, quietSdk, s3Overrides, s3Target, type OpenedS3, type S3Target } from '../s3-dest.js';

const HELP = `Usage: resourcesync sync <source-url> <dest-dir> [options]

Mirror a ResourceSync Source into <dest-dir>: a baseline from the Resource List the first time (or
when changes were missed), incremental from the Change List afterwards. Every resource is verified
(length and hashes) while streaming to a temporary file, then renamed into place. State (SQLite),
cursor and lock live in <dest-dir>/.resourcesync/, or where --state says (PostgreSQL, another file).
<dest-dir> may be s3://BUCKET/PREFIX: the copies go to that bucket, each one verified before it
becomes visible (Content-MD5 checked by the server), and --state is required.

<source-url> is a Capability List, Source Description, Resource List (Index) or Change List (Index).

Options:
  --delete                 apply deletions (default: only report them)
  --baseline               take a new baseline even when the state could go on incrementally:
                           every file held is read, kept when it matches the Resource List and
                           fetched again otherwise; the cursor starts over at the list's time
  --concurrency N          resources fetched at once (default 16)
  --dry-run                show the plan and change nothing, state included: one line per
                           resource to create, update or delete, with the reason, printed
                           as it is planned; then the count of each action
  --json                   print one JSON report on stdout; with --dry-run, JSON Lines: one
                           plan item per line, every resource (unchanged ones included) as
                           it is planned, then the report on the last line (its "plan": the
                           count of each action and reason, and the first 1,000 items that
                           change something)
  --capability-list URL    with several Capability Lists, sync only this one
  --url-prefix URL         mirror only the resources whose URL starts with URL (an absolute
                           http(s) URL); repeatable. The others are left alone and counted
                           (note outside-url-prefixes); a resource held from before that falls
                           outside is removed by the next baseline with --delete. Another set
                           of prefixes than the last baseline's takes a new baseline
  --allow-origin ORIGIN    also allow this origin (mirrors, other hosts); repeatable
  --base URL               the URL that maps to <dest-dir> (default: the origin of <source-url>)
  --map URL=DIR            resources under URL go to <dest-dir>/DIR; repeatable
  --prefer-dump            use a Resource Dump / Change Dump when offered
  --with describedby       also mirror each resource's describedby targets (its metadata records,
                           §14.5): the n-th link of the resource at a/b.txt lands at
                           <dest-dir>/.resourcesync-describedby[-n]/a/b.txt (n from 2), checked
                           against the Source's authority and verified by the link's length
                           and hash; copies whose link is gone are removed (not with --dry-run
                           or --follow)
  --prefer-mirrors         try rel="duplicate" mirrors before the primary URL
  --warc PATH              also write every resource fetched (and verified) as a WARC/1.1 response
                           record, gzip per record, with a CDXJ index beside each file: PATH is
                           a folder, or a file name ending in .warc.gz; a file left half-written
                           by a killed run is cut back to its last whole record on the next run;
                           with --follow, the changes applied as they come too
  --warc-max-size SIZE     bytes per WARC file before the next one (default 1G; K, M, G suffixes)
  --timeout MS             HTTP connect/headers/body-idle timeout (default 30000); with --follow,
                           also the deadline for reading the whole change channel
  --deadline MS            most time for one ResourceSync document, whole body included, spent
                           waiting on the Source (default 600000); resources are bound by
                           --timeout only
  --rate N                 at most N requests per second to each origin (default: no limit);
                           a Retry-After on 429/503 always holds every request to that origin
  --retries N              HTTP retries on 5xx, 429 and network errors (default 3)
  --fsync-method M         how files are made durable before they are renamed into place:
                           batch (default: one flush per batch of files, syncfs on Linux)
                           or file (an fsync of each file)
  --no-fsync               do not make files durable before renaming them (faster, not
                           safe against a power cut)
${STATE_HELP}
${QUEUE_HELP}
${S3_HELP}
  --follow                 keep following the Source: subscribe to its change notification
                           channel and apply changes as they are announced (poll the Change
                           List when there is no channel or the hub is unreachable); one line
                           per applied batch; SIGINT/SIGTERM unsubscribe and exit 0
  --listen HOST:PORT       with --follow: where the callback listens (default 127.0.0.1:0)
  --callback-url URL       with --follow: the callback URL given to the hub (default
                           http://<listen>/callback)
  --interval S             with --follow: seconds between polls (default 60)
  --reconcile-interval S   with --follow: while subscribed, read the Change List all the same every S
                           seconds (default 300), for changes no notification brought
  --xmpp URI               with --follow: receive the notifications from the XMPP PubSub node the
                           Source advertises (instead of its WebSub hub), logged in as
                           xmpp://USER@DOMAIN[:PORT][?server=HOST]; or from the node given:
                           xmpp://USER@DOMAIN[:PORT]/SERVICE?node=NODE. The password comes from
                           the environment variable ${XMPP_PASSWORD_ENV}. A lost
                           connection falls back to polling and is made again
  -h, --help               show this help

Credentials: RESOURCESYNC_BEARER=<token> or RESOURCESYNC_BASIC=<user:password> for the Source's
origin; RESOURCESYNC_AUTH_<HOST>=<Authorization value> for any origin (host and port in upper
case, other characters as _, e.g. RESOURCESYNC_AUTH_EXAMPLE_COM_8080).

Exit codes:
  0  in sync: every resource verified and written (or unchanged), the changes made
     at the Source while the sync ran included
  1  finished, but some resources (or --with describedby targets) failed (see the report)
  2  usage error
  3  error (not a ResourceSync document, nothing to synchronize from, unsafe input, I/O;
     a --state database that cannot be reached, refused the login or does not exist)
  4  the destination is locked by another sync (here or, with --state postgres://, on
     any machine sharing the database)
  5  the Source could not be reached (connection refused, DNS, timeout, 5xx after
     retries), is unavailable for now (a 5xx or 429 while discovering: the status,
     URL and Retry-After are named; try again later) or refused access (401/403: see
     Credentials)
  130 interrupted
`;


const SYNC_FLAGS = {
  ...MIRROR_OPTIONS,
  ...STATE_OPTIONS,
  ...QUEUE_OPTIONS,
  ...S3_OPTIONS,
  delete: { type: 'boolean' },
  baseline: { type: 'boolean' },
  concurrency: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'prefer-dump': { type: 'boolean' },
  'prefer-mirrors': { type: 'boolean' },
  retries: { type: 'string' },
  'no-fsync': { type: 'boolean' },
  'fsync-method': { type: 'string' },
  follow: { type: 'boolean' },
  listen: { type: 'string' },
  'callback-url': { type: 'string' },
  interval: { type: 'string' },
  'reconcile-interval': { type: 'string' },
  xmpp: { type: 'string' },
  with: { type: 'string', multiple: true },
  ...WARC_ARGS,
} as const;

type SyncFlags = ParsedCommandArgs<typeof SYNC_FLAGS>['values'];

/** What the command line asks for, checked. */
interface SyncCommand {
  source: string;
  dest: string;
  flags: SyncFlags;
  common: MirrorOptions;
  concurrency: number | undefined;
  retries: number | undefined;
  /** What `--no-fsync` and `--fsync-method` name. */
  fsync: boolean;
  fsyncMethod: 'batch' | 'file';
  xmpp: XmppArgs | undefined;
  withDescribedBy: boolean;
  /** Where the state lives (`--state`, `--state-key`). */
  state: StateChoice;
  /** Where the resources are handed to workers (`--queue`), if anywhere. */
  queue: QueueChoice | undefined;
  /** The bucket of an `s3://` destination. */
  s3: S3Target | undefined;
  /** `--warc` and `--warc-max-size`. */
  warc: Pick<WarcArchiveOptions, 'path' | 'maxBytes'> | undefined;
}


/** The arguments parsed and checked, or the exit code after the help or a usage error. */
function parseSync(args: string[]): SyncCommand | number {
  const parsed = parseCommandArgs('sync', args, SYNC_FLAGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const flags = parsed.values;
  const positionals = sourceAndDest('sync', parsed.positionals);
  if (typeof positionals === 'number') return positionals;
  const [source, dest] = positionals;
  let concurrency: number | undefined, retries: number | undefined, common: MirrorOptions, state: StateChoice, queue: QueueChoice | undefined, s3: S3Target | undefined;
  try {
    concurrency = integerOption('concurrency', flags.concurrency, 1);
    retries = integerOption('retries', flags.retries, 0);
    common = mirrorOptions(flags);
    state = stateChoice(flags, dest);
    queue = queueChoice(flags, state);
    s3 = s3Target(dest, flags, state);
    if (flags['fsync-method'] !== undefined && flags['fsync-method'] !== 'batch' && flags['fsync-method'] !== 'file') {
      throw new Error(`--fsync-method must be 'batch' or 'file', not '${flags['fsync-method']}'`);
    }
  } catch (err) {
    return usageError('sync', err);
  }
  if (flags.xmpp !== undefined && flags.follow !== true) return usageError('sync', '--xmpp goes with --follow.');
  const unknownWith = (flags.with ?? []).find((w) => w !== 'describedby');
  if (unknownWith !== undefined) return usageError('sync', `--with '${unknownWith}' is not a relation this sync mirrors (describedby).`);
  const withDescribedBy = (flags.with ?? []).length > 0;
  if (withDescribedBy && (flags['dry-run'] === true || flags.follow === true || s3 !== undefined)) return usageError('sync', '--with goes without --dry-run, --follow and an s3:// destination.');
  const xmpp = flags.xmpp === undefined ? undefined : xmppAccount(flags.xmpp, 'destination');
  if (typeof xmpp === 'string') return usageError('sync', xmpp);
  const warc = warcChoice(flags, { dryRun: flags['dry-run'] === true, queue: queue !== undefined });
  if (typeof warc === 'string') return usageError('sync', warc);
  const fsync = !(flags['no-fsync'] ?? false);
  const fsyncMethod = flags['fsync-method'] === 'file' ? 'file' : 'batch';
  return { source, dest, flags, common, concurrency, retries, fsync, fsyncMethod, xmpp, withDescribedBy, state, queue, s3, warc };
}

/** The library options of a sync and of following alike. */
function baseSyncOptions(command: SyncCommand): SyncOptions {
  const { source, dest, flags, common, concurrency, retries } = command;
  return {
    source,
    dest,
    delete: flags.delete ?? false,
    preferDump: flags['prefer-dump'] ?? false,
    preferMirrors: flags['prefer-mirrors'] ?? false,
    ...common,
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(retries !== undefined ? { retries } : {}),
  };
}

/**
 * Runs `work` with SIGINT and SIGTERM aborting the signal it is given; `cleanup` runs when it is done, before the
 * signals are let go.
 */
async function interruptible(work: (signal: AbortSignal) => Promise<number>, cleanup: () => Promise<void>): Promise<number> {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(controller.signal);
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Where `--follow` listens, how often it polls and reconciles, or the exit code of a usage error. */
function followSettings(flags: SyncFlags): Pick<FollowOptions, 'listen' | 'callbackUrl' | 'intervalMs' | 'reconcileMs'> | number {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(flags.listen ?? '127.0.0.1:0');
  if (m === null || Number(m[2]) > 65535) return usageError('sync', `--listen '${flags.listen}' is not HOST:PORT.`);
  const interval = Number(flags.interval ?? '60');
  if (!(interval > 0)) return usageError('sync', `--interval '${flags.interval}' is not a positive number of seconds.`);
  const reconcile = Number(flags['reconcile-interval'] ?? '300');
  if (!(reconcile > 0 && reconcile * 1000 < 2 ** 31)) {
    const given = flags['reconcile-interval'];
    return usageError('sync', `--reconcile-interval '${given}' is not a positive number of seconds.`);
  }
  const callbackUrl = flags['callback-url'];
  if (callbackUrl !== undefined && !URL.canParse(callbackUrl)) return usageError('sync', `--callback-url '${callbackUrl}' is not a URL.`);
  return {
    listen: { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) },
    ...(callbackUrl !== undefined ? { callbackUrl } : {}),
    intervalMs: interval * 1000,
    reconcileMs: reconcile * 1000,
  };
}

/** `sync --follow`: the first sync, then the changes as they are announced, until SIGINT or SIGTERM (exit 0). */
async function runFollow(command: SyncCommand): Promise<number> {
  const settings = followSettings(command.flags);
  if (typeof settings === 'number') return settings;
  const { flags, xmpp } = command;
  // the thread and the syncfs shell, once the arguments are known good
  const durable = cliDurability(command.fsync, command.fsyncMethod);
  let opened: OpenedState | undefined;
  let s3: OpenedS3 | undefined;
  let archive: WarcArchive | undefined;
  const work = async (signal: AbortSignal): Promise<number> => {
    try {
      s3 = command.s3 === undefined ? undefined : await openS3Target(command.s3);
      opened = await openStateChoice(command.state, command.dest, { readonly: false });
      const state = opened.state === undefined ? {} : { state: opened.state };
      if (command.warc !== undefined) archive = await openWarcArchive(command.warc);
      return await follow({
        syncOptions: { ...baseSyncOptions(command), ...state, durability: durable.durability, ...s3Overrides(s3), ...(archive === undefined ? {} : { archive }) },
        ...settings,
        ...(xmpp === undefined ? {} : { xmpp }),
        json: flags.json ?? false,
        signal,
        log: (line) => void stderr.write(`${line}\n`),
      });
    } catch (err) {
      reportFailure('sync', err, flags.json);
      return signal.aborted ? 0 : exitCodeOf(err);
    }
  };
  return interruptible(work, async () => {
    // the records written while following: their file closed, indexed and renamed
    const summary = await archive?.close().catch(() => undefined);
    if (summary !== undefined && flags.json !== true) stderr.write(describeWarc(summary));
    await durable.close();
    await opened?.close();
    await s3?.close();
  });
}

/** The options of one sync: a dry run prints its plan as it is decided, a run that writes shows its progress. */
function onceOptions(command: SyncCommand, durability: Durability, bar: ProgressBar, signal: AbortSignal): SyncOptions {
  const { flags } = command;
  const dryRun = flags['dry-run'] ?? false;
  // a dry run prints its plan as it is decided: JSON Lines (every item) with --json, else a line per change
  const print = lineWriter(stdout);
  const onPlan = (item: PlanItem): Promise<void> | undefined => {
    if (flags.json === true) return print(JSON.stringify(item));
    if (item.action === 'unchanged') return undefined;
    bar.done();
    return print(planLine(item));
  };
  return {
    ...baseSyncOptions(command),
    baseline: flags.baseline ?? false,
    dryRun,
    ...(dryRun ? { onPlan } : {}),
    durability,
    signal,
    onProgress: (p) => bar.update({ label: p.phase, done: p.done, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.estimate !== undefined ? { estimate: p.estimate } : {}), bytes: p.bytes, failed: p.failed }),
  };
}

/** Prints the report (and the describedby targets' one); the exit code says whether everything arrived. */
function printSync(command: SyncCommand, report: SyncReport & { warc?: WarcArchiveSummary }, described: DescribedByReport | undefined): number {
  if (command.flags.json) stdout.write(`${JSON.stringify(described === undefined ? report : { ...report, describedby: described })}\n`);
  else stdout.write(describeSync(report) + (described === undefined ? '' : describeDescribedBy(described)));
  return report.failed.length > 0 || (described?.failed.length ?? 0) > 0 ? EXIT.INCOMPLETE : EXIT.OK;
}

/** A plain sync on the state `open` opens, or with `--queue` a coordinator's (which opens the state it names). */
async function syncOnce(command: SyncCommand, options: SyncOptions, bar: ProgressBar, open: () => Promise<SyncOptions['state']>): Promise<SyncReport> {
  const { queue, state: choice } = command;
  if (queue !== undefined && choice.kind === 'postgres') {
    // with a bucket the coordinator opens it as the workers do: from the URL, with the endpoint here
    if (command.s3 !== undefined) quietSdk();
    const s3 = command.s3 === undefined ? {} : { dest: command.dest, ...(command.s3.endpoint !== undefined ? { s3Endpoint: command.s3.endpoint } : {}) };
    return syncWithQueue({ ...queueSyncOptions(options, queue, choice, bar), ...s3 });
  }
  const state = await open();
  return sync({ ...options, ...(state === undefined ? {} : { state }) });
}

/** One sync (and, with `--with describedby`, the describedby targets), its report printed. */
async function runOnce(command: SyncCommand): Promise<number> {
  const { source, dest, flags, common, retries } = command;
  const bar = new ProgressBar(stderr, !(flags.json ?? false));
  // the thread and the syncfs shell, not for a dry run (which writes nothing)
  const durable = flags['dry-run'] === true ? undefined : cliDurability(command.fsync, command.fsyncMethod);
  const durability = durable?.durability ?? durabilityFor({ fsync: command.fsync, method: command.fsyncMethod });
  let opened: OpenedState | undefined;
  let s3: OpenedS3 | undefined;
  let archive: WarcArchive | undefined;
  const work = async (signal: AbortSignal): Promise<number> => {
    try {
      s3 = command.s3 === undefined || command.queue !== undefined ? undefined : await openS3Target(command.s3);
      if (command.warc !== undefined) archive = await openWarcArchive(command.warc);
      const warcOption = archive === undefined ? {} : { archive };
      const synced = await syncOnce(command, { ...onceOptions(command, durability, bar, signal), ...s3Overrides(s3), ...warcOption }, bar, async () => {
        opened = await openStateChoice(command.state, dest, { readonly: flags['dry-run'] === true });
        return opened.state;
      });
      const report = s3 === undefined ? synced : { ...synced, dest: s3.location };
      bar.done();
      let warcSummary: WarcArchiveSummary | undefined;
      if (archive !== undefined) {
        warcSummary = await archive.close();
        archive = undefined;
        if (flags.json !== true) stderr.write(describeWarc(warcSummary));
      }
      const describedDurability = command.fsync ? new FsyncEach() : new RenameOnly();
      const described = command.withDescribedBy
        ? await mirrorDescribedBy({ source, dest, ...common, durability: describedDurability, signal, ...(retries !== undefined ? { retries } : {}) })
        : undefined;
      return printSync(command, warcSummary === undefined ? report : { ...report, warc: warcSummary }, described);
    } catch (err) {
      bar.done();
      reportFailure('sync', err, flags.json);
      return signal.aborted ? EXIT.ABORTED : exitCodeOf(err);
    }
  };
  return interruptible(work, async () => {
    // an interrupted or failed sync: the records written so far are kept, their file closed and indexed
    await archive?.close().catch(() => undefined);
    await durable?.close();
    await opened?.close();
    await s3?.close();
  });
}


/** `resourcesync sync`. */
export async function run(args: string[]): Promise<number> {
  const command = parseSync(args);
  if (typeof command === 'number') return command;
  return command.flags.follow === true ? runFollow(command) : runOnce(command);
}
