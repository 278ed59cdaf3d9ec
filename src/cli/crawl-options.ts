/**
 * What `check` and `explore` share: the options that bound a crawl of a Source (`--max-documents`, `--rate`,
 * `--allow-origin`, `--timeout`, `--deadline`), the one `<url>` they start from, and a client that is closed and interrupted
 * (SIGINT) in one place.
 */
import { createAuthority, originOf, type Authority } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import type { HttpGet } from '../client/http.js';
import { usageError } from './command-args.js';
import { integerOption, reportFailure } from './mirror-options.js';

/** The command-line options of a crawl. */
export const CRAWL_OPTIONS = {
  json: { type: 'boolean' },
  'max-documents': { type: 'string' },
  rate: { type: 'string' },
  'allow-origin': { type: 'string', multiple: true },
  timeout: { type: 'string' },
  deadline: { type: 'string' },
} as const;

/** A crawl's starting point and bounds. */
export interface Crawl {
  url: string;
  authority: Authority;
  maxDocuments: number;
  /** Requests per second (0: no pacing). */
  rate: number;
  timeoutMs: number;
  /** Most time for one request, whole body included. */
  deadlineMs: number;
}

/** Reads the `<url>` and the crawl options, or says what is wrong and returns the usage exit code. */
export function crawlOf(
  command: string,
  positionals: string[],
  v: {
    'max-documents'?: string | undefined;
    rate?: string | undefined;
    'allow-origin'?: string[] | undefined;
    timeout?: string | undefined;
    deadline?: string | undefined;
  },
): Crawl | number {
  if (positionals.length !== 1) return usageError(command, 'expected one <url>.');
  const url = positionals[0]!;
  const origin = originOf(url);
  if (origin === undefined) return usageError(command, `'${url}' is not an http(s) URL.`);
  try {
    return {
      url,
      authority: createAuthority({ origins: [origin, ...(v['allow-origin'] ?? [])] }),
      maxDocuments: integerOption('max-documents', v['max-documents'], 1) ?? 1000,
      rate: integerOption('rate', v.rate, 0) ?? 20,
      timeoutMs: integerOption('timeout', v.timeout, 1) ?? 30_000,
      deadlineMs: integerOption('deadline', v.deadline, 1) ?? 120_000,
    };
  } catch (error) {
    return usageError(command, error);
  }
}

/**
 * Runs `fn` with an HTTP client for the crawl, interrupted by SIGINT and closed afterwards. A failure is reported
 * (`--json` too) and gives exit 3 (the Source cannot be read), 130 when interrupted.
 */
export async function withCrawlClient(
  command: string,
  crawl: Crawl,
  json: boolean | undefined,
  fn: (http: HttpGet, signal: AbortSignal) => Promise<number>,
): Promise<number> {
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  const http = createHttpClient({ authority: crawl.authority, timeoutMs: crawl.timeoutMs, signal: ac.signal });
  try {
    return await fn(http, ac.signal);
  } catch (error) {
    reportFailure(command, error, json);
    return ac.signal.aborted ? 130 : 3;
  } finally {
    process.off('SIGINT', stop);
    await http.close();
  }
}
