import { stdout } from 'node:process';
import { audit, type AuditReport } from '../../destination/audit.js';
import { repair, type RepairReport } from '../../destination/repair.js';
import { auditVia, type ViaAuditReport } from '../../destination/audit-via.js';
import { EXIT, MIRROR_OPTIONS, describeNotes, exitCodeOf, mirrorOptions, reportFailure, sourceAndDest, type MirrorOptions } from '../mirror-options.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { STATE_HELP, STATE_OPTIONS, openStateChoice, stateChoice, type OpenedState, type StateChoice } from '../state-option.js';
import { S3_HELP, S3_OPTIONS, openS3Target, s3Overrides, s3Target, type OpenedS3, type S3Target } from '../s3-dest.js';

const HELP = `Usage: resourcesync audit <source-url> <dest-dir> [options]

Compare a mirror with the Source's current state (its Resource List plus the changes listed after
it): resources missing, extra, changed (by length or hash) and unchanged. Local files are read and
hashed whenever the Source offers hashes. Nothing is changed. <dest-dir> may be s3://BUCKET/PREFIX
(the objects are read and hashed; --state is required).

Options:
  --json                   print one JSON report on stdout
  --trust-state            compare with the state store instead of reading the files (says so)
  --repair                 then repair what is out of sync: a new baseline reads every file held,
                           keeps those that match and fetches the missing and changed ones again
                           (as 'sync --baseline'); the audit after the repair is reported
  --delete                 with --repair: also delete the extra files
  --via                    then check the provenance (Z39.99 §14.8) of a mirror of an aggregate: fetch
                           the original each copy's rs:ln rel="via" names and report the copies whose
                           original has moved on (other hash or length than the link says, or gone:
                           404/410) or cannot be reached; exit 1 when any. Originals are fetched
                           only on the origins --allow-origin names (the aggregated Sources'),
                           redirects are not followed, and a body is read up to the link's length
  --capability-list URL    with several Capability Lists, audit only this one
  --url-prefix URL         audit only the resources whose URL starts with URL, as 'sync
                           --url-prefix' mirrors them (a copy held outside is extra); repeatable
  --allow-origin ORIGIN    also allow this origin; repeatable
  --base URL               the URL that maps to <dest-dir> (default: the origin of <source-url>)
  --map URL=DIR            resources under URL are in <dest-dir>/DIR; repeatable
  --timeout MS             HTTP timeout (default 30000)
  --deadline MS            most time for one ResourceSync document, whole body included (default 600000)
${STATE_HELP}
${S3_HELP}
  -h, --help               show this help

Exit codes:
  0  in sync (with --repair: after the repair)
  1  out of sync (missing, extra or changed resources, or resources that cannot be held)
  2  usage error (a <dest-dir> that is a file included)
  3  error (not a ResourceSync document, I/O; a --state database that cannot be reached,
     refused the login or does not exist)
  4  with --repair: the destination is locked by a sync
  5  the Source could not be reached, or is unavailable for now (a 5xx or 429 while
     discovering: the status, URL and Retry-After are named)
`;

/** Human summary of an audit. */
export function describeAudit(r: AuditReport): string {
  const lines = [
    `Audit of ${r.dest} against ${r.source}: ${r.inSync ? 'in sync' : 'OUT OF SYNC'}${r.trustedState ? ' (state store trusted, files not read)' : ''}`,
    `  ${r.total} on offer: ${r.unchanged} unchanged, ${r.counts.missing} missing, ${r.counts.changed} changed, ${r.counts.extra} extra, ${r.counts.failed} failed`,
  ];
  for (const m of r.missing.slice(0, 20)) lines.push(`  missing: ${m.path} (${m.url})`);
  for (const c of r.changed.slice(0, 20)) lines.push(`  changed (${c.reason}): ${c.path}`);
  for (const e of r.extra.slice(0, 20)) lines.push(`  extra: ${e}`);
  for (const f of r.failed.slice(0, 20)) lines.push(`  failed: ${f.url} [${f.code}] ${f.message}`);
  if (r.unverifiable > 0) lines.push(`  ${r.unverifiable} resource(s) have no hash, length or lastmod to compare`);
  return `${lines.join('\n')}\n${describeNotes(r.warnings)}`;
}

/** Human summary of a provenance check. */
export function describeVia(r: ViaAuditReport): string {
  const lines = [
    `Provenance of ${r.dest}: ${r.inStep ? 'every original as its via link says' : 'ORIGINALS MOVED ON'}`,
    `  ${r.checked} copies with a via link: ${r.current} current, ${r.counts.changed} changed, ${r.counts.gone} gone, ${r.counts.unreachable} unreachable`,
  ];
  for (const d of r.movedOn.slice(0, 20)) lines.push(`  ${d.reason}: ${d.path} (original ${d.original}${d.detail === undefined ? '' : `: ${d.detail}`})`);
  if (r.unverifiable > 0) lines.push(`  ${r.unverifiable} via link(s) give no hash or length: only the original's presence was checked`);
  if (r.notChecked > 0) lines.push(`  ${r.notChecked} copies not checked (limit)`);
  return `${lines.join('\n')}\n`;
}

/** Human summary of a repair: the audit before, what was done, the audit after. */
function describeRepair(r: RepairReport): string {
  if (r.sync === undefined) return describeAudit(r.before);
  const s = r.sync;
  const did = `Repaired: fetched ${s.created + s.updated}, kept ${s.unchanged}, deleted ${s.deleted + r.removed.length}, failed ${s.failed.length}`;
  return `${describeAudit(r.before)}${did}\n${describeAudit(r.after)}`;
}

/** A report (an audit's, a repair's and the audits and sync in it) naming the bucket as its destination. */
function inBucket<T extends { dest: string } | RepairReport>(report: T, s3: OpenedS3 | undefined): T {
  if (s3 === undefined) return report;
  const dest = s3.location;
  if ('before' in report) {
    return { ...report, before: { ...report.before, dest }, after: { ...report.after, dest }, ...(report.sync === undefined ? {} : { sync: { ...report.sync, dest } }) };
  }
  return { ...report, dest };
}

/** `resourcesync audit`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('audit', args, { ...MIRROR_OPTIONS, ...STATE_OPTIONS, ...S3_OPTIONS, 'trust-state': { type: 'boolean' }, repair: { type: 'boolean' }, delete: { type: 'boolean' }, via: { type: 'boolean' } }, HELP);
  if (typeof parsed === 'number') return parsed;
  const v = parsed.values;
  const positionals = sourceAndDest('audit', parsed.positionals);
  if (typeof positionals === 'number') return positionals;
  const [source, dest] = positionals;
  let common: MirrorOptions, choice: StateChoice, target: S3Target | undefined;
  try {
    common = mirrorOptions(v);
    choice = stateChoice(v, dest);
    target = s3Target(dest, v, choice);
  } catch (err) {
    return usageError('audit', err);
  }
  if (v.delete === true && v.repair !== true) return usageError('audit', '--delete goes with --repair.');
  if (v.via === true && v.repair === true) return usageError('audit', '--via checks the provenance only: not with --repair.');
  let opened: OpenedState | undefined;
  let s3: OpenedS3 | undefined;
  try {
    s3 = target === undefined ? undefined : await openS3Target(target);
    opened = await openStateChoice(choice, dest, { readonly: v.repair !== true });
    const state = { ...(opened.state === undefined ? {} : { state: opened.state }), ...s3Overrides(s3) };
    if (v.repair === true) {
      const r = inBucket(await repair({ source, dest, trustState: v['trust-state'] ?? false, delete: v.delete ?? false, ...common, ...state }), s3);
      if (v.json) stdout.write(`${JSON.stringify(r)}\n`);
      else stdout.write(describeRepair(r));
      return r.after.inSync ? EXIT.OK : EXIT.INCOMPLETE;
    }
    const report = inBucket(await audit({ source, dest, trustState: v['trust-state'] ?? false, ...common, ...state }), s3);
    const via = v.via === true ? await auditVia({ dest, allowOrigins: common.allowOrigins ?? [], ...(opened.state === undefined ? {} : { state: opened.state }) }) : undefined;
    if (v.json) stdout.write(`${JSON.stringify(via === undefined ? report : { ...report, via })}\n`);
    else stdout.write(describeAudit(report) + (via === undefined ? '' : describeVia(via)));
    return report.inSync && via?.inStep !== false ? EXIT.OK : EXIT.INCOMPLETE;
  } catch (err) {
    reportFailure('audit', err, v.json);
    return exitCodeOf(err);
  } finally {
    await opened?.close();
    await s3?.close();
  }
}
