/**
 * What `resourcesync sync` prints: the lines of a dry run's plan, written as they come with back-pressure, and the
 * human summaries of a sync report and of the describedby targets it mirrored.
 */
import type { SyncReport } from '../destination/sync.js';
import type { DescribedByReport } from '../destination/described-by.js';
import type { PlanItem, PlanSummary } from '../destination/plan.js';
import { describeNotes } from './mirror-options.js';

/** The line of a plan item that changes something: action, URL, reason. */
export function planLine(item: PlanItem): string {
  return `  ${item.action.padEnd(6)} ${item.url} (${item.reason}${item.kept === true ? ', kept: no --delete' : ''})`;
}

/** The count of each action of a plan; `kept` deletions are planned but not applied (no --delete). */
function planCounts(plan: PlanSummary, kept: number): string {
  const c = plan.counts;
  return `  plan: ${c.create} to create, ${c.update} to update, ${c.delete} to delete${kept > 0 ? ` (${kept} kept)` : ''}, ${c.unchanged} unchanged`;
}

/**
 * Writes lines on `out` as they come; when its buffer is full, the promise returned settles once it drains, so a
 * caller that waits for it (the sync's `onPlan`) keeps memory bounded however many lines it prints. An output
 * that fails or closes meanwhile (a reader gone: EPIPE) rejects it, which stops the sync.
 */
export function lineWriter(out: NodeJS.WritableStream): (line: string) => Promise<void> | undefined {
  let drained: Promise<void> | undefined;
  return (line) => {
    if (!out.write(`${line}\n`) && drained === undefined) {
      drained = new Promise((resolve, reject) => {
        const done = (err?: unknown): void => {
          out.off('drain', onDrain);
          out.off('error', done);
          out.off('close', onClose);
          drained = undefined;
          if (err === undefined) resolve();
          else reject(err instanceof Error ? err : new Error('The output failed.'));
        };
        const onDrain = (): void => done();
        const onClose = (): void => done(new Error('The output was closed before the plan was written.'));
        out.once('drain', onDrain);
        out.once('error', done);
        out.once('close', onClose);
      });
    }
    return drained;
  };
}

/** Human summary of a sync report; for a dry run, the count of each action of its plan (its lines came before). */
export function describeSync(r: SyncReport): string {
  const lines = [`${r.dryRun ? 'Dry run: ' : ''}${r.mode} sync of ${r.source} into ${r.dest}`];
  if (r.plan !== undefined) lines.push(planCounts(r.plan, r.deletionsSkippedCount));
  else {
    lines.push(
      `  created ${r.created}, updated ${r.updated}, deleted ${r.deleted}, unchanged ${r.unchanged}, failed ${r.failed.length}` +
        ` (${(r.bytes / 1048576).toFixed(1)} MB in ${(r.durationMs / 1000).toFixed(1)} s)`,
    );
  }
  if (r.deletionsSkippedCount > 0) lines.push(`  ${r.deletionsSkippedCount} deletion(s) not applied (use --delete)`);
  for (const f of r.failed.slice(0, 20)) lines.push(`  failed: ${f.url} [${f.code}] ${f.message}`);
  if (r.failed.length > 20) lines.push(`  … and ${r.failed.length - 20} more failures`);
  return `${lines.join('\n')}\n${describeNotes(r.warnings)}`;
}

/** Human summary of the describedby targets mirrored (`--with describedby`). */
export function describeDescribedBy(d: DescribedByReport): string {
  const lines = [`  describedby: ${d.written} written, ${d.unchanged} unchanged, ${d.removed} removed, ${d.failed.length} failed`];
  for (const f of d.failed.slice(0, 20)) lines.push(`  failed: ${f.url} (describedby of ${f.resource}) [${f.code}] ${f.message}`);
  return `${lines.join('\n')}\n`;
}
