/**
 * `sync --warc PATH [--warc-max-size SIZE]`: the options checked, and the lines that tell what was written.
 * @see src/destination/warc-archive.ts
 */
import type { WarcArchiveOptions, WarcArchiveSummary } from '../destination/warc-archive.js';

/** The options, in `parseArgs` form. */
export const WARC_ARGS = {
  warc: { type: 'string' },
  'warc-max-size': { type: 'string' },
} as const;

/** `--warc-max-size`: bytes, with an optional K, M or G (binary) suffix; default 1 GiB. */
function warcSize(value: string | undefined): number {
  if (value === undefined) return 2 ** 30;
  const m = /^(\d+)([KMG]?)$/i.exec(value);
  const n = m === null ? NaN : Number(m[1]) * 1024 ** ' KMG'.indexOf((m[2] || ' ').toUpperCase());
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--warc-max-size '${value}' is not a size in bytes (e.g. 1048576, 500M, 1G)`);
  return n;
}

/**
 * The archive `--warc` asks for (undefined without it), or the message of a usage error.
 * @example warcChoice({ warc: './archive', 'warc-max-size': '500M' }, { dryRun: false, queue: false }) // { path: './archive', maxBytes: 524288000 }
 */
export function warcChoice(
  flags: { warc?: string; 'warc-max-size'?: string },
  with_: { dryRun: boolean; queue: boolean },
): Pick<WarcArchiveOptions, 'path' | 'maxBytes'> | undefined | string {
  if (flags.warc === undefined) return flags['warc-max-size'] === undefined ? undefined : '--warc-max-size goes with --warc.';
  if (flags.warc === '') return '--warc needs a folder or a .warc.gz file name.';
  if (with_.dryRun) return '--warc goes without --dry-run.';
  if (with_.queue) return '--warc goes without --queue (the workers fetch the resources).';
  try {
    return { path: flags.warc, maxBytes: warcSize(flags['warc-max-size']) };
  } catch (err) {
    return (err as Error).message;
  }
}

/** The WARC files written, and the files of a killed run that were repaired. */
export function describeWarc(s: WarcArchiveSummary): string {
  const lines = s.recovered.map((r) => `WARC: repaired ${r.file} (a killed run's): ${r.records} records kept, ${r.truncatedBytes} bytes cut off`);
  lines.push(`WARC: ${s.records} records, ${s.bytes} bytes in ${s.files.length} file(s)${s.files.length > 0 ? `: ${s.files.join(', ')}` : ''}`);
  return `${lines.join('\n')}\n`;
}
