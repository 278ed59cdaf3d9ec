/**
 * `resourcesync check <url> [--json] [--html FILE] [--sample N] [--max-documents N] [--rate N]`: crawls a live
 * Source from any URL and judges it whole (every document, the rules that span documents, dump packages,
 * discovery, a sample of resources). Exit 0 when conformant (warnings allowed), 1 when a MUST is broken,
 * 2 on usage errors, 3 when the Source cannot be reached.
 * @see Z39.99 §6–13
 */
import { writeFile } from 'node:fs/promises';
import { stderr, stdout } from 'node:process';
import { check, type CheckProgress, type CheckReport } from '../../check/check.js';
import { renderCheckHtml } from '../../check/html.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { CRAWL_OPTIONS, crawlOf, withCrawlClient } from '../crawl-options.js';
import { integerOption } from '../mirror-options.js';

const HELP = `Usage: resourcesync check <url> [options]

Crawls a ResourceSync Source from any URL (origin, Source Description, Capability List, list, resource or
HTML page), politely and bounded, and judges it whole: every document validated under the version of the
standard it implies, the rules that span documents (up/index links, capabilities, Change List Index
intervals, archives, dump packages and manifests, discovery), and a sample of resources compared with
what the lists say.

Options:
  --json               print one JSON object: documents and issues
  --html FILE          also write a self-contained HTML report to FILE
  --sample N           resources to fetch and compare (default 300; 0 for none)
  --max-documents N    most documents fetched (default 1000)
  --rate N             requests per second at most (default 20; 0 for no pacing)
  --allow-origin ORIGIN  also follow links to this origin; repeatable
  --timeout MS         HTTP timeout (default 30000)
  --deadline MS        most time for one document, whole body included (default 120000)
  -h, --help           show this help

Exit codes:
  0  conformant (warnings allowed)
  1  a MUST of the standard is broken (see the errors)
  2  usage error
  3  the Source cannot be reached (or is not a ResourceSync Source)
`;

/** The terminal summary of a report. */
export function describeCheck(r: CheckReport): string {
  const lines = [
    `Check of ${r.start}: ${r.conformant ? 'CONFORMANT' : 'NOT CONFORMANT'}`,
    `  ${r.documents.length} documents, ${r.resources} resources listed, ${r.sampled} sampled (${r.linkHeaders} with a Link rel="resourcesync" header), ${(r.durationMs / 1000).toFixed(1)} s`,
    `  ${r.errors} errors, ${r.warnings} warnings`,
  ];
  const shown = [...r.issues]
    .sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1))
    .slice(0, 50);
  for (const i of shown) {
    lines.push(
      `  ${i.severity} ${i.code}: ${i.url}${i.line !== undefined ? `:${i.line}` : ''}: ${i.message} (${i.section})`,
    );
  }
  if (r.issues.length > shown.length)
    lines.push(`  … ${r.issues.length - shown.length} more (use --json or --html for all)`);
  return `${lines.join('\n')}\n`;
}

/** Runs `resourcesync check`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('check', args, { ...CRAWL_OPTIONS, html: { type: 'string' }, sample: { type: 'string' } }, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const crawl = crawlOf('check', parsed.positionals, values);
  if (typeof crawl === 'number') return crawl;
  let sample: number;
  try {
    sample = integerOption('sample', values.sample, 0) ?? 300;
  } catch (error) {
    return usageError('check', error);
  }
  const tty = stderr.isTTY && values.json !== true;
  let last = 0;
  const onProgress = (p: CheckProgress): void => {
    if (!tty) return;
    const now = Date.now();
    if (now - last < 200) return;
    last = now;
    stderr.write(`\r\x1b[2K${p.phase}: ${p.documents} documents, ${p.entries} entries, ${p.resources} resources, ${p.requests} requests`);
  };
  return withCrawlClient('check', crawl, values.json, async (http, signal) => {
    const { url, authority, maxDocuments, rate, deadlineMs } = crawl;
    try {
      const report = await check({ url, http, authority, sample, maxDocuments, rate, deadlineMs, signal, onProgress });
      if (values.html !== undefined) await writeFile(values.html, renderCheckHtml(report));
      if (tty) stderr.write('\r\x1b[2K');
      stdout.write(values.json === true ? `${JSON.stringify(report)}\n` : describeCheck(report));
      return report.conformant ? 0 : 1;
    } catch (error) {
      if (tty) stderr.write('\r\x1b[2K');
      throw error;
    }
  });
}
