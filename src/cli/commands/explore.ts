/**
 * `resourcesync explore <url> [--json] [--depth N] [--max-documents N] [--rate N]`: prints a Source's document
 * tree (sets, capabilities, documents with their at/from/until, entry counts, sizes, dumps and packages).
 * Exit 0 when the tree was read, 2 on usage errors, 3 when the Source cannot be reached.
 * @see Z39.99 §6.1
 */
import { stdout } from 'node:process';
import { explore, type ExploreResult, type TreeNode } from '../../check/explore.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { CRAWL_OPTIONS, crawlOf, withCrawlClient } from '../crawl-options.js';
import { integerOption } from '../mirror-options.js';

const HELP = `Usage: resourcesync explore <url> [options]

Prints the document tree of a ResourceSync Source found from <url> (origin, Source Description,
Capability List, list, resource or HTML page): Capability Lists (one per set of resources), the
documents they advertise, index parts, archives, dumps and their packages, each with its time
(at, from, until), entry count and size. Resources are not fetched.

Options:
  --json               print the tree as one JSON object
  --depth N            levels below the Source Description to read (default: all)
  --max-documents N    most documents fetched (default 1000)
  --rate N             requests per second at most (default 20; 0 for no pacing)
  --allow-origin ORIGIN  also follow links to this origin; repeatable
  --timeout MS         HTTP timeout (default 30000)
  -h, --help           show this help

Exit codes: 0 done, 2 usage error, 3 the Source cannot be reached.
`;

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(1)} GB`;
}

function describeNode(n: TreeNode): string {
  const times: string[] = [];
  if (n.at !== undefined) times.push(`at ${n.at}`);
  if (n.completed !== undefined) times.push(`completed ${n.completed}`);
  if (n.from !== undefined) times.push(`from ${n.from}`);
  if (n.from !== undefined || n.until !== undefined) times.push(n.until === undefined ? 'open' : `until ${n.until}`);
  const what = n.kind ?? `unidentified${n.capability === undefined ? '' : ` (${n.capability})`}`;
  const facts =
    n.status !== undefined
      ? `HTTP ${n.status}`
      : n.kind === 'package'
        ? size(n.bytes)
        : `${n.entries} ${n.entries === 1 ? 'entry' : 'entries'}, ${size(n.bytes)}`;
  return `${what} ${n.url}${times.length === 0 ? '' : ` ${times.join(' ')}`} [${facts}]`;
}

/** The tree as indented text lines. */
export function describeTree(result: ExploreResult): string {
  const lines: string[] = [];
  const walk = (n: TreeNode, prefix: string, last: boolean, root: boolean): void => {
    lines.push(root ? describeNode(n) : `${prefix}${last ? '└─ ' : '├─ '}${describeNode(n)}`);
    const childPrefix = root ? '' : `${prefix}${last ? '   ' : '│  '}`;
    n.children.forEach((c, i) => walk(c, childPrefix, i === n.children.length - 1, false));
  };
  for (const r of result.roots) walk(r, '', true, true);
  lines.push(`${result.documents} documents`);
  return `${lines.join('\n')}\n`;
}

/** Runs `resourcesync explore`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('explore', args, { ...CRAWL_OPTIONS, depth: { type: 'string' } }, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const crawl = crawlOf('explore', HELP, parsed.positionals, values);
  if (typeof crawl === 'number') return crawl;
  let maxDepth: number | undefined;
  try {
    maxDepth = integerOption('depth', values.depth, 0);
  } catch (error) {
    return usageError('explore', error);
  }
  return withCrawlClient('explore', crawl, values.json, async (http, signal) => {
    const { url, authority, maxDocuments, rate } = crawl;
    const result = await explore({ url, http, authority, maxDocuments, rate, signal, ...(maxDepth === undefined ? {} : { maxDepth }) });
    stdout.write(values.json === true ? `${JSON.stringify(result)}\n` : describeTree(result));
    return 0;
  });
}
