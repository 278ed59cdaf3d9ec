/**
 * `resourcesync explore <url> [--json] [--depth N] [--max-documents N] [--rate N]`: prints a Source's document
 * tree (sets, capabilities, documents with their at/from/until, entry counts, sizes, dumps and packages).
 * Exit 0 when the tree was read, 2 on usage errors, 3 when the Source cannot be reached.
 * @see Z39.99 §6.1
 */
import { stderr, stdout } from 'node:process';
import { explore, type ExploreResult, type TreeNode } from '../../check/explore.js';
import { isResourceSyncError } from '../../core/errors.js';
import { createAuthority, originOf, type Authority } from '../../destination/authority.js';
import { createHttpClient } from '../../destination/http-client.js';
import { parseCommandArgs, usageError } from '../command-args.js';

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

function count(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new Error(`--${name} '${value}' is not a whole number.`);
  return Number(value);
}

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
  const parsed = parseCommandArgs(
    'explore',
    args,
    {
      json: { type: 'boolean' },
      depth: { type: 'string' },
      'max-documents': { type: 'string' },
      rate: { type: 'string' },
      'allow-origin': { type: 'string', multiple: true },
      timeout: { type: 'string' },
    },
    HELP,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) return usageError('explore', 'expected one <url>.', HELP);
  const url = positionals[0]!;
  const origin = originOf(url);
  if (origin === undefined) return usageError('explore', `'${url}' is not an http(s) URL.`);
  let maxDepth: number | undefined, maxDocuments: number, rate: number, timeoutMs: number;
  let authority: Authority;
  try {
    maxDepth = values.depth === undefined ? undefined : count(values.depth, 'depth', 0);
    maxDocuments = count(values['max-documents'], 'max-documents', 1000);
    rate = count(values.rate, 'rate', 20);
    timeoutMs = count(values.timeout, 'timeout', 30_000);
    if (maxDocuments < 1) throw new Error('--max-documents must be at least 1.');
    authority = createAuthority({ origins: [origin, ...(values['allow-origin'] ?? [])] });
  } catch (error) {
    return usageError('explore', error);
  }
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  const http = createHttpClient({ authority, timeoutMs, signal: ac.signal });
  try {
    const result = await explore({
      url,
      http,
      authority,
      maxDocuments,
      rate,
      signal: ac.signal,
      ...(maxDepth === undefined ? {} : { maxDepth }),
    });
    stdout.write(values.json === true ? `${JSON.stringify(result)}\n` : describeTree(result));
    return 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (values.json === true)
      stdout.write(
        `${JSON.stringify({ error: { code: isResourceSyncError(error) ? error.code : 'RS_IO', message } })}\n`,
      );
    stderr.write(`resourcesync explore: ${message}\n`);
    return ac.signal.aborted ? 130 : 3;
  } finally {
    process.off('SIGINT', stop);
    await http.close();
  }
}
