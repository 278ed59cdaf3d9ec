/**
 * `resourcesync explore <url> [--json] [--depth N] [--max-documents N] [--rate N]`: prints a Source's document
 * tree (sets, capabilities, documents with their at/from/until, entry counts, sizes, dumps and packages).
 * Exit 0 when the tree was read, 2 on usage errors, 3 when the Source cannot be reached.
 * `resourcesync explore --web <url> [--port N] [--host H]` serves the explorer page instead (src/web), prints
 * `listening on <url>` and runs until SIGINT or SIGTERM (exit 0).
 * @see Z39.99 §6.1
 */
import { stderr, stdout } from 'node:process';
import { explore, type ExploreResult, type TreeNode } from '../../check/explore.js';
import { createHttpClient } from '../../client/http-client.js';
import { listen, type Listener } from '../../notify/node-listener.js';
import { createExplorerHandler } from '../../web/explorer.js';
import { hostCheck } from '../../node/request-guard.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { CRAWL_OPTIONS, crawlOf, withCrawlClient, type Crawl } from '../crawl-options.js';
import { integerOption } from '../mirror-options.js';
import { messageOf } from '../../core/errors.js';
import { isPostgresUrl } from '../../destination/queue-jobs.js';
import { openQueueProgress, type QueueProgressReader } from '../../destination/queue-progress.js';
import { redactedUrl } from '../../node/postgres.js';

const HELP = `Usage: resourcesync explore <url> [options]
       resourcesync explore --web <url> [--port N] [--host H] [--queue postgres://…] [options]

Prints the document tree of a ResourceSync Source found from <url> (origin, Source Description,
Capability List, list, resource or HTML page): Capability Lists (one per set of resources), the
documents they advertise, index parts, archives, dumps and their packages, each with its time
(at, from, until), entry count and size. Resources are not fetched.

With --web, serves a page on 127.0.0.1 instead (its URL is printed) that shows the tree, opens any
document's entries (paged, searchable by URL), shows the Change Lists as a time line, opens dump packages
and their manifests, and runs check. It reads the Source on the server side and only the Source (and
the --allow-origin origins); it runs until interrupted (Ctrl-C). With --queue, the page also has a
Queue tab: each sync run on that job queue (sync --queue, worker), its chunks waiting, active, done
and failed and the resources done and failed, read every few seconds (the URL is not shown).

Options:
  --json               print the tree as one JSON object
  --web                serve the explorer page instead of printing the tree
  --port N             port of the page (with --web; default 8090, 0 picks a free one)
  --host H             interface of the page (with --web; default 127.0.0.1)
  --queue URL          also show the runs of the job queue at this postgres:// URL (with --web)
  --depth N            levels below the Source Description to read (default: all)
  --max-documents N    most documents fetched (default 1000)
  --rate N             requests per second at most (default 20; 0 for no pacing)
  --allow-origin ORIGIN  also follow links to this origin; repeatable
  --timeout MS         HTTP timeout (default 30000)
  --deadline MS        most time for one document, whole body included (default 120000)
  -h, --help           show this help

Exit codes: 0 done (--web: stopped by SIGINT or SIGTERM), 1 the page cannot listen, 2 usage error,
3 the Source cannot be reached.
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

/** Serves the explorer page until SIGINT or SIGTERM. */
async function serveWeb(crawl: Crawl, port: number, host: string, queueUrl: string | undefined): Promise<number> {
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const http = createHttpClient({ authority: crawl.authority, timeoutMs: crawl.timeoutMs, signal: ac.signal });
  const { url, authority, maxDocuments, rate } = crawl;
  // only requests addressed to the page's own host (DNS rebinding); known once it listens
  let ownHost: ((host: string | null) => boolean) | undefined;
  const allowHost = (host: string | null): boolean => ownHost?.(host) ?? false;
  // read-only, and its connection is made on the first read: a queue that cannot be reached shows on the page
  const queue: QueueProgressReader | undefined = queueUrl === undefined ? undefined : await openQueueProgress(queueUrl);
  const handler = createExplorerHandler({
    source: url,
    http,
    authority,
    maxDocuments,
    rate,
    signal: ac.signal,
    allowHost,
    ...(queue === undefined ? {} : { queue: () => queue.read() }),
  });
  let listener: Listener | undefined;
  try {
    listener = await listen(handler, {
      port,
      host,
      onError: (e) => void stderr.write(`resourcesync explore: ${messageOf(e)}\n`),
    });
    ownHost = hostCheck(listener.url, [host]);
    stdout.write(`listening on ${listener.url}/\n`);
    await new Promise<void>((resolve) => {
      if (ac.signal.aborted) resolve();
      else ac.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    return 0;
  } catch (error) {
    stderr.write(`resourcesync explore: cannot listen on ${host}:${port}: ${messageOf(error)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await listener?.close();
    await http.close();
    await queue?.close();
  }
}

/** Runs `resourcesync explore`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs(
    'explore',
    args,
    { ...CRAWL_OPTIONS, depth: { type: 'string' }, web: { type: 'boolean' }, port: { type: 'string' }, host: { type: 'string' }, queue: { type: 'string' } },
    HELP,
  );
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const crawl = crawlOf('explore', parsed.positionals, values);
  if (typeof crawl === 'number') return crawl;
  let maxDepth: number | undefined;
  let port: number;
  try {
    maxDepth = integerOption('depth', values.depth, 0);
    port = integerOption('port', values.port, 0) ?? 8090;
    if (port > 65535) throw new Error(`--port '${values.port}' is not a port number`);
  } catch (error) {
    return usageError('explore', error);
  }
  if (values.web !== true && (values.port !== undefined || values.host !== undefined || values.queue !== undefined))
    return usageError('explore', '--port, --host and --queue go with --web.');
  if (values.queue !== undefined && !isPostgresUrl(values.queue))
    return usageError('explore', `--queue '${redactedUrl(values.queue)}' is not a postgres:// URL.`);
  if (values.web === true) {
    if (values.json === true || maxDepth !== undefined) return usageError('explore', '--web does not take --json or --depth.');
    return serveWeb(crawl, port, values.host ?? '127.0.0.1', values.queue);
  }
  return withCrawlClient('explore', crawl, values.json, async (http, signal) => {
    const { url, authority, maxDocuments, rate, deadlineMs } = crawl;
    const result = await explore({ url, http, authority, maxDocuments, rate, deadlineMs, signal, ...(maxDepth === undefined ? {} : { maxDepth }) });
    stdout.write(values.json === true ? `${JSON.stringify(result)}\n` : describeTree(result));
    return 0;
  });
}
