/**
 * An `aggregate` child process for tests, and what they poll it with: its status file, a file's content, an
 * async predicate against a deadline.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { readAggregateStatus, type SourceStatus } from '../../src/aggregate/status.js';
import { startCli, until, type CliChild } from './cli-child.js';

/** The status of Source `id` as the aggregator last wrote it, or undefined (not written yet). */
export function statusOf(out: string, id: string): SourceStatus | undefined {
  try {
    return readAggregateStatus(out).find((s) => s.id === id);
  } catch {
    return undefined;
  }
}

/** True when `file` holds `want`. */
export async function fileIs(file: string, want: string): Promise<boolean> {
  return readFile(file, 'utf8').then(
    (c) => c === want,
    () => false,
  );
}

/** Polls an async predicate every 100 ms until it holds; throws past `timeoutMs` with `logs()`. */
export async function untilAsync(what: string, predicate: () => Promise<boolean>, timeoutMs = 60_000, logs: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts `resourcesync aggregate <config> --verbose` (on `port`, default any) and waits for its `listening on` line. */
export async function startAggregate(config: string, port = 0, env?: NodeJS.ProcessEnv): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['aggregate', config, '--port', String(port), '--verbose'], env);
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  return { p, url: /^listening on (\S+)/m.exec(p.out())![1]! };
}
