/**
 * `resourcesync simulate [--resources N] [--rate R] [--mix C:U:D] [--size BYTES] [--seed S] [--port N] [--changes N] [--json]`:
 * a live Source whose resources are created, updated and deleted at a set rate, seeded and reproducible.
 * The resources live in a temporary directory that the simulator changes atomically and our own Source
 * publishes (Source Description, Capability List, Resource List, Change Lists) and serves, as `serve` does.
 * Prints `listening on <url>` once the first publication is served; with `--json`, `{"listening":"<url>"}` and
 * then one line per change.
 * @see Z39.99 §12 (Change List)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatW3CDatetime } from '../../core/w3c-datetime.js';
import { createLiveSource, type LiveSource } from '../../live/live-source.js';
import { encodeSegment } from '../../source/url-path.js';
import {
  ChangeSimulator,
  type SimulatedChange,
  applyChange,
  changeDigest,
  MAX_SIMULATED_RESOURCES,
  MAX_SIMULATED_SIZE,
} from '../../source/simulator.js';
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';

const HELP = `Usage: resourcesync simulate [options]

Runs a live ResourceSync Source whose resources are created, updated and deleted at a set rate. The
sequence of changes and the bytes of every resource follow from the options alone (same seed, same
changes). The Source publishes Change Lists as 'serve' does; the resources live in a temporary directory
that is removed on exit.

Options:
  --resources N     resources at the start (default 100)
  --rate R          changes per second (default 1; 0 makes no change)
  --mix C:U:D       relative weights of created, updated, deleted changes (default 1:2:1)
  --size BYTES      bytes of each resource (default 1024)
  --seed S          seed of the sequence, 0 to 4294967295 (default 1)
  --changes N       stop changing after N changes and keep serving (default: no limit)
  --port N          TCP port (default 8080; 0 picks a free one)
  --host H          interface to listen on (default 127.0.0.1)
  --json            JSON on every line of stdout: {"listening":URL} first, then one line per
                    change: seq, change, path, url, length, md5, at
  -h, --help        show this help
`;

/** How often the publisher looks for unpublished changes, ms: changes show in the open Change List within about this long. */
const PUBLISH_EVERY_MS = 500;

function integerOption(value: string | undefined, fallback: number, min: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n >= min && n <= max ? n : undefined;
}

const ARGS = {
  resources: { type: 'string' },
  rate: { type: 'string' },
  mix: { type: 'string' },
  size: { type: 'string' },
  seed: { type: 'string' },
  changes: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** What the options ask for, once checked. */
interface SimulateConfig {
  simulator: ChangeSimulator;
  /** Changes per second (0: none). */
  rate: number;
  /** Changes to make at most. */
  limit: number;
  port: number;
  host: string;
  json: boolean;
}

/** Checks the options; returns what they ask for, or the usage error's exit code. */
function readConfig(values: ParsedCommandArgs<typeof ARGS>['values'], positionals: string[]): SimulateConfig | number {
  if (positionals.length > 0) return usageError('simulate', `unexpected argument '${positionals[0]}'.`);
  const resources = integerOption(values.resources, 100, 0, MAX_SIMULATED_RESOURCES);
  if (resources === undefined)
    return usageError(
      'simulate',
      `--resources '${values.resources}' is not a whole number from 0 to ${MAX_SIMULATED_RESOURCES}.`,
    );
  const size = integerOption(values.size, 1024, 0, MAX_SIMULATED_SIZE);
  if (size === undefined)
    return usageError('simulate', `--size '${values.size}' is not a whole number from 0 to ${MAX_SIMULATED_SIZE}.`);
  const seed = integerOption(values.seed, 1, 0, 0xffffffff);
  if (seed === undefined)
    return usageError('simulate', `--seed '${values.seed}' is not a whole number from 0 to 4294967295.`);
  const limit = integerOption(values.changes, Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER);
  if (limit === undefined) return usageError('simulate', `--changes '${values.changes}' is not a whole number.`);
  const port = integerOption(values.port, 8080, 0, 65535);
  if (port === undefined) return usageError('simulate', `--port '${values.port}' is not a port number.`);
  const rate = values.rate === undefined ? 1 : Number(values.rate);
  if (!Number.isFinite(rate) || rate < 0 || rate > 100_000 || values.rate?.trim() === '') {
    return usageError('simulate', `--rate '${values.rate}' is not a number of changes per second from 0 to 100000.`);
  }
  const mixText = values.mix ?? '1:2:1';
  const mix = mixText.split(':').map((w) => (/^\d+(\.\d+)?$/.test(w) ? Number(w) : NaN));
  if (mix.length !== 3 || mix.some((w) => Number.isNaN(w)) || mix.every((w) => w === 0)) {
    return usageError('simulate', `--mix '${mixText}' is not three non-negative weights C:U:D, one of them positive.`);
  }
  const simulator = new ChangeSimulator({ resources, size, seed, mix: [mix[0]!, mix[1]!, mix[2]!] });
  return { simulator, rate, limit, port, host: values.host ?? '127.0.0.1', json: values.json === true };
}

/** Whether changes were made since the last publication started. */
interface Dirty {
  value: boolean;
}

/** The publisher: one publication at a time, whenever changes were made since the last one started. */
async function publishWhileChanging(source: LiveSource, dirty: Dirty, signal: AbortSignal, log: (line: string) => void): Promise<void> {
  while (!signal.aborted) {
    if (dirty.value) {
      dirty.value = false;
      try {
        await source.publishNow();
      } catch (error) {
        if (!signal.aborted) log(`resourcesync simulate: publishing failed: ${messageOf(error)}`);
      }
    }
    await sleep(PUBLISH_EVERY_MS, undefined, { signal }).catch(() => undefined);
  }
}

/** The line of stdout (with --json) for a change just made. */
function changeLine(change: SimulatedChange, baseUrl: string): string {
  const url = `${baseUrl}/${change.path.split('/').map(encodeSegment).join('/')}`;
  const md5 = changeDigest(change);
  const line = {
    seq: change.seq,
    change: change.change,
    path: change.path,
    url,
    ...(change.bytes === undefined ? {} : { length: change.bytes.length, md5 }),
    at: formatW3CDatetime(Date.now()),
  };
  return `${JSON.stringify(line)}\n`;
}

/** The changes, at `rate` per second measured from the start (a slow change is caught up, not skipped). */
async function makeChanges(config: SimulateConfig, dir: string, source: LiveSource, dirty: Dirty, signal: AbortSignal): Promise<void> {
  const { simulator, rate, limit, json } = config;
  if (rate <= 0) return;
  const started = performance.now();
  while (!signal.aborted && simulator.changes < limit) {
    const due = started + ((simulator.changes + 1) * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) break;
    const change = simulator.next();
    await applyChange(dir, change);
    source.invalidate();
    dirty.value = true;
    if (json) process.stdout.write(changeLine(change, source.url));
  }
}

/** Runs `resourcesync simulate`; resolves with the exit code once the server has shut down. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('simulate', args, ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const config = readConfig(parsed.values, parsed.positionals);
  if (typeof config === 'number') return config;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const root = await mkdtemp(join(tmpdir(), 'rs-simulate-'));
  const dir = join(root, 'resources');
  let source: LiveSource | undefined;
  try {
    await config.simulator.populate(dir, ac.signal);
    try {
      source = await createLiveSource({
        sets: [{ name: 'simulated', dir }],
        port: config.port,
        host: config.host,
        stateDir: join(root, 'state'),
        watch: false,
        signal: ac.signal,
        onEvent: (e) => {
          if (e.type === 'error') log(`resourcesync simulate: ${messageOf(e.error)}`);
        },
      });
    } catch (error) {
      if (!isResourceSyncError(error, 'RS_NETWORK')) throw error;
      log(`resourcesync simulate: ${error.message}`);
      return 1;
    }
    await source.ready();
    if (ac.signal.aborted) return 0;
    // with --json every line of stdout is JSON, this one included
    process.stdout.write(config.json ? `${JSON.stringify({ listening: source.url })}\n` : `listening on ${source.url}\n`);
    const dirty: Dirty = { value: false };
    const publisher = publishWhileChanging(source, dirty, ac.signal, log);
    await makeChanges(config, dir, source, dirty, ac.signal);
    await source.closed;
    await publisher;
    const { simulator } = config;
    if (!config.json) log(`resourcesync simulate: made ${simulator.changes} changes; ${simulator.resources} resources.`);
    return 0;
  } catch (error) {
    if (ac.signal.aborted) return 0;
    log(`resourcesync simulate: ${messageOf(error)}`);
    return 1;
  } finally {
    ac.abort();
    await source?.closed;
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await rm(root, { recursive: true, force: true });
  }
}
