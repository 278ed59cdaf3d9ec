/**
 * A child process that drives the Destination's HTTP client (`createHttpClient`) the way a sync does: many
 * requests in flight, one AbortSignal shared by all of them, bodies read slowly or fast. A crash inside the
 * client (an uncaught exception in undici) kills this process instead of the test runner; the test reads the
 * exit status and stderr.
 *
 * Run: `node fetch-child.js run` with a {@link FetchPlan} as JSON on stdin; prints one {@link FetchReport} as
 * JSON on stdout and exits 0 when every request settled. Without the `run` argument it does nothing (the test
 * runner loads every file under `dist/test/`).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAuthority } from '../../src/client/authority.js';
import { createHttpClient } from '../../src/client/http-client.js';
import { isResourceSyncError } from '../../src/core/errors.js';

/** One request of a plan. */
export interface FetchItem {
  url: string;
  /** Milliseconds to wait after each chunk of the body (0: read as fast as it comes). */
  slowMs: number;
}

/** What the child is asked to do. */
export interface FetchPlan {
  origin: string;
  items: FetchItem[];
  /** Requests in flight at once (a sync's default is 16). */
  concurrency: number;
  timeoutMs: number;
  retries: number;
  /** The child gives up (exit 3) after this many milliseconds. */
  deadlineMs: number;
}

/** How one request ended. */
export interface FetchOutcome {
  url: string;
  /** `body`: the body was read to its end; `error`: the request or the body rejected. */
  outcome: 'body' | 'error';
  status?: number;
  length?: number;
  sha256?: string;
  /** For `error`: the error's class name, `code` and `recoverable` flag. */
  error?: { name: string; code?: string; recoverable?: boolean; message: string };
}

/** The child's report on stdout. */
export interface FetchReport {
  outcomes: FetchOutcome[];
  /** Every process warning emitted while the requests ran (e.g. MaxListenersExceededWarning). */
  warnings: { name: string; message: string }[];
  durationMs: number;
}

async function readStdin(): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of process.stdin) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

async function fetchOne(http: ReturnType<typeof createHttpClient>, item: FetchItem, signal: AbortSignal): Promise<FetchOutcome> {
  let status: number | undefined;
  try {
    const res = await http(item.url, { signal });
    status = res.status;
    const hash = createHash('sha256');
    let length = 0;
    for await (const chunk of res.body) {
      hash.update(chunk);
      length += chunk.byteLength;
      if (item.slowMs > 0) await sleep(item.slowMs);
    }
    return { url: item.url, outcome: 'body', status, length, sha256: hash.digest('hex') };
  } catch (err) {
    const e = err as { name?: string; code?: string; message?: string };
    return {
      url: item.url,
      outcome: 'error',
      ...(status !== undefined ? { status } : {}),
      error: {
        name: isResourceSyncError(err) ? 'ResourceSyncError' : (e?.name ?? typeof err),
        ...(e?.code !== undefined ? { code: e.code } : {}),
        ...(isResourceSyncError(err) ? { recoverable: err.recoverable } : {}),
        message: e?.message ?? String(err),
      },
    };
  }
}

async function main(): Promise<void> {
  const plan = JSON.parse(await readStdin()) as FetchPlan;
  const warnings: FetchReport['warnings'] = [];
  process.on('warning', (w) => warnings.push({ name: w.name, message: w.message }));
  const deadline = setTimeout(() => {
    process.stderr.write(`fetch-child: not done after ${plan.deadlineMs} ms\n`);
    process.exit(3);
  }, plan.deadlineMs);
  const controller = new AbortController();
  const http = createHttpClient({
    authority: createAuthority({ origins: [plan.origin] }),
    concurrency: plan.concurrency,
    timeoutMs: plan.timeoutMs,
    retries: plan.retries,
    retryBaseMs: 10,
    signal: controller.signal,
    env: {},
  });
  const started = Date.now();
  const outcomes: FetchOutcome[] = new Array<FetchOutcome>(plan.items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < plan.items.length) {
      const i = next++;
      outcomes[i] = await fetchOne(http, plan.items[i]!, controller.signal);
    }
  };
  await Promise.all(Array.from({ length: plan.concurrency }, worker));
  const durationMs = Date.now() - started;
  await http.close();
  // warnings are emitted on the next tick after the code that caused them
  await sleep(10);
  clearTimeout(deadline);
  const report: FetchReport = { outcomes, warnings, durationMs };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

if (process.argv[2] === 'run') {
  main().catch((err: unknown) => {
    process.stderr.write(`fetch-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  });
}
