/**
 * The publication options that `resourcesync build` and `resourcesync serve` share: fixity, list limits,
 * dumps, retention, gzip and the Source's description. One table of `parseArgs` options, one help text and
 * one parser, so that both commands accept the same names with the same meaning.
 * @see Z39.99 §7 (limits), §10–13 (lists and dumps); ResourceSync Archives (retention)
 */
import { HASH_ALGORITHMS, type HashAlgorithm } from '../core/constants.js';
import type { PublishOptions } from '../source/publish.js';

/** The shared options, in `parseArgs` form. */
export const PUBLISH_ARGS = {
  hashes: { type: 'string' },
  'max-entries': { type: 'string' },
  'changelist-max': { type: 'string' },
  'changelist-period': { type: 'string' },
  dumps: { type: 'boolean' },
  'package-size': { type: 'string' },
  'dump-format': { type: 'string' },
  retention: { type: 'string' },
  gzip: { type: 'boolean' },
  'described-by': { type: 'string' },
} as const;

/** Help lines of the shared options (two-space indent, descriptions at column 27). */
export const PUBLISH_HELP = `  --hashes LIST           fixity algorithms, comma-separated: md5, sha-1, sha-256 (default md5)
  --max-entries N         entries per Resource List before an index is written (default 50000)
  --changelist-max N      changes per Change List before it is closed (default 50000)
  --changelist-period S   close the open Change List after S seconds (checked at each run)
  --dumps                 also write a Resource Dump and a Change Dump (ZIP packages)
  --package-size BYTES    bytes of bitstreams per dump package (default 104857600)
  --dump-format F         package format of the dumps: zip (default) or warc (WARC/1.1, .warc.gz)
  --retention N           closed Change Lists, Resource Lists and Resource Dumps kept
                          (default: every Change List, 5 Resource Lists, 5 Resource Dumps)
  --gzip                  write the documents gzipped, as .xml.gz (the Source Description
                          at /.well-known/resourcesync stays plain XML)
  --described-by URL      a page describing the Source (rel="describedby" of the Source Description)
`;

/** A wrong value of a shared option; the message names the option. */
export class PublishArgsError extends Error {}

/** The values of the shared options as `parseArgs` gives them. */
export type PublishArgValues = Partial<Record<'hashes' | 'max-entries' | 'changelist-max' | 'changelist-period' | 'package-size' | 'dump-format' | 'retention' | 'described-by', string>> &
  Partial<Record<'dumps' | 'gzip', boolean>>;

/** The publication options set by the shared command-line options. */
export type PublishArgsResult = Pick<PublishOptions, 'hashes' | 'changeList' | 'maxEntries' | 'retention' | 'describedBy' | 'dumps' | 'gzip'>;

function posInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value)))
    throw new PublishArgsError(`--${name} '${value}' is not a positive integer`);
  return Number(value);
}

/**
 * Turns the shared options into publication options; throws `PublishArgsError` for a wrong value.
 * @example const o = publishArgs({ hashes: 'md5,sha-256', dumps: true }); // { hashes: ['md5', 'sha-256'], dumps: true, changeList: {} }
 */
export function publishArgs(values: PublishArgValues): PublishArgsResult {
  const hashes = (values.hashes ?? 'md5')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  for (const h of hashes) if (!Object.hasOwn(HASH_ALGORITHMS, h)) throw new PublishArgsError(`--hashes: unknown algorithm '${h}' (md5, sha-1, sha-256)`);
  const period = posInt(values['changelist-period'], 'changelist-period');
  const clMax = posInt(values['changelist-max'], 'changelist-max');
  const packageSize = posInt(values['package-size'], 'package-size');
  const maxEntries = posInt(values['max-entries'], 'max-entries');
  const retention = posInt(values.retention, 'retention');
  const format = values['dump-format'];
  if (format !== undefined && format !== 'zip' && format !== 'warc') throw new PublishArgsError(`--dump-format '${format}' is not zip or warc`);
  if (format !== undefined && values.dumps !== true) throw new PublishArgsError('--dump-format needs --dumps');
  const dumpOptions = { ...(packageSize !== undefined ? { maxPackageBytes: packageSize } : {}), ...(format === 'warc' ? { format: 'warc' as const } : {}) };
  return {
    hashes: [...new Set(hashes)] as HashAlgorithm[],
    changeList: {
      ...(clMax !== undefined ? { maxEntries: clMax } : {}),
      ...(period !== undefined ? { periodMs: period * 1000 } : {}),
    },
    ...(maxEntries !== undefined ? { maxEntries } : {}),
    ...(retention !== undefined ? { retention } : {}),
    ...(values['described-by'] !== undefined ? { describedBy: values['described-by'] } : {}),
    ...(values.dumps === true ? { dumps: Object.keys(dumpOptions).length > 0 ? dumpOptions : true } : {}),
    ...(values.gzip === true ? { gzip: true } : {}),
  };
}
