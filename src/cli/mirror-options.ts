import { stderr, stdout } from 'node:process';
import { isResourceSyncError, messageOf } from '../core/errors.js';
import type { Mapping } from '../destination/mapper.js';
import type { DestinationNote } from '../destination/notes.js';
import { urlPrefixProblem } from '../destination/url-filter.js';
import { USAGE_EXIT, usageError } from './command-args.js';

/** Exit codes of `sync` and `audit`. */
export const EXIT = { OK: 0, INCOMPLETE: 1, USAGE: USAGE_EXIT, ERROR: 3, LOCKED: 4, NETWORK: 5, ABORTED: 130 } as const;

/** Command-line options that `sync` and `audit` share: how to reach the Source and where resources land. */
export const MIRROR_OPTIONS = {
  json: { type: 'boolean' },
  'capability-list': { type: 'string' },
  'allow-origin': { type: 'string', multiple: true },
  base: { type: 'string' },
  map: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  deadline: { type: 'string' },
  rate: { type: 'string' },
  'url-prefix': { type: 'string', multiple: true },
} as const;

/** The library options those command-line options stand for. */
export interface MirrorOptions {
  maps: Mapping[];
  timeoutMs?: number;
  deadlineMs?: number;
  rate?: number;
  capabilityList?: string;
  allowOrigins?: string[];
  base?: string;
  /** `--url-prefix`: only the resources under these. */
  urlPrefixes?: string[];
}

/** Parses an integer option; throws a usage message when it is not an integer ≥ `min`. */
export function integerOption(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} '${value}' is not an integer ≥ ${min}`);
  return n;
}

/** Parses repeated `URL=DIR` pairs. */
function parseMaps(values: string[] | undefined): Mapping[] {
  return (values ?? []).map((v) => {
    const i = v.lastIndexOf('=');
    if (i <= 0) throw new Error(`--map '${v}' is not URL=DIR`);
    return { url: v.slice(0, i), dir: v.slice(i + 1) };
  });
}

/** The shared options as library options; throws a usage message for malformed values. */
export function mirrorOptions(v: {
  map?: string[] | undefined;
  timeout?: string | undefined;
  deadline?: string | undefined;
  rate?: string | undefined;
  'capability-list'?: string | undefined;
  'allow-origin'?: string[] | undefined;
  base?: string | undefined;
  'url-prefix'?: string[] | undefined;
}): MirrorOptions {
  const timeoutMs = integerOption('timeout', v.timeout, 1);
  const deadlineMs = integerOption('deadline', v.deadline, 1);
  let rate: number | undefined;
  if (v.rate !== undefined) {
    rate = Number(v.rate);
    if (!Number.isFinite(rate) || rate <= 0) throw new Error(`--rate '${v.rate}' is not a positive number of requests per second`);
  }
  for (const p of v['url-prefix'] ?? []) {
    const problem = urlPrefixProblem(p);
    if (problem !== undefined) throw new Error(`--url-prefix '${p}' ${problem}`);
  }
  return {
    maps: parseMaps(v.map),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    ...(rate !== undefined ? { rate } : {}),
    ...(v['capability-list'] !== undefined ? { capabilityList: v['capability-list'] } : {}),
    ...(v['allow-origin'] !== undefined ? { allowOrigins: v['allow-origin'] } : {}),
    ...(v.base !== undefined ? { base: v.base } : {}),
    ...(v['url-prefix'] !== undefined ? { urlPrefixes: v['url-prefix'] } : {}),
  };
}

/** The two positionals `<source-url> <dest-dir>`, or the usage exit code after saying what is wrong. */
export function sourceAndDest(command: string, positionals: string[]): [string, string] | number {
  const [source, dest] = positionals;
  if (source === undefined || dest === undefined || positionals.length > 2) return usageError(command, 'expected <source-url> <dest-dir>');
  return [source, dest];
}

/** Maps an error to an exit code. */
export function exitCodeOf(err: unknown): number {
  if (isResourceSyncError(err, 'RS_LOCKED')) return EXIT.LOCKED;
  if (isResourceSyncError(err, 'RS_ABORTED')) return EXIT.ABORTED;
  if (isResourceSyncError(err, 'RS_NETWORK') || isResourceSyncError(err, 'RS_HTTP_TIMEOUT') || isResourceSyncError(err, 'RS_HTTP_STATUS')) return EXIT.NETWORK;
  if (isResourceSyncError(err, 'RS_INVALID_ARGUMENT')) return EXIT.USAGE;
  return EXIT.ERROR;
}

/**
 * Reports a failed run on stderr (and as JSON on stdout with `--json`, with the error's data: for discovery, what
 * was tried and noted). Never a stack trace: an error that is not a ResourceSyncError is reported by its message.
 */
export function reportFailure(command: string, err: unknown, json: boolean | undefined): void {
  const message = messageOf(err);
  if (json) {
    const error = isResourceSyncError(err) ? { code: err.code, message, data: err.data } : { code: 'RS_IO', message };
    stdout.write(`${JSON.stringify({ error })}\n`);
  }
  const data = isResourceSyncError(err) ? (err.data as { notes?: unknown } | undefined) : undefined;
  const notes = Array.isArray(data?.notes) ? (data.notes as NoteLike[]) : [];
  stderr.write(`resourcesync ${command}: ${message}\n${describeNotes(notes, 8)}`);
}

/** What {@link describeNotes} reads of a Destination's note. */
type NoteLike = Pick<DestinationNote, 'code' | 'severity' | 'message'>;

/**
 * A run's notes or warnings for a person: the count of each code on one line, then the first `few` in full, then
 * how many more there are (`--json` has them all). Empty when there are none.
 * @example describeNotes(report.warnings) // '  warnings: 3 (2 outside-authority, 1 http-status)\n  warning: …\n'
 */
export function describeNotes(notes: readonly NoteLike[], few = 5): string {
  if (notes.length === 0) return '';
  const byCode = new Map<string, number>();
  for (const n of notes) byCode.set(n.code, (byCode.get(n.code) ?? 0) + 1);
  const counts = [...byCode].map(([code, n]) => `${n} ${code}`).join(', ');
  const label = notes.every((n) => n.severity === 'warning') ? 'warnings' : 'notes';
  const lines = [`  ${label}: ${notes.length} (${counts})`];
  for (const n of notes.slice(0, few)) lines.push(`  ${n.severity}: ${n.message}`);
  if (notes.length > few) lines.push(`  … and ${notes.length - few} more (--json lists them all)`);
  return `${lines.join('\n')}\n`;
}
