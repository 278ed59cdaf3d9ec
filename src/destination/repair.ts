import { resolve } from 'node:path';
import { audit, type AuditOptions, type AuditReport } from './audit.js';
import { sync, type SyncOptions, type SyncReport } from './sync.js';
import { LocalDirectory } from './local-directory.js';

/** Options of {@link repair}: those of an audit, and of the sync that repairs. */
export type RepairOptions = AuditOptions &
  Pick<SyncOptions, 'durability' | 'verifyRetries'> & {
    /** Also delete what the audit finds extra (files the Source does not offer). Default false. */
    delete?: boolean;
  };

/** What a repair found and did. */
export interface RepairReport {
  /** The audit before the repair. */
  before: AuditReport;
  /** The sync that fetched what was missing or changed (a baseline that reads every file held); absent when in sync. */
  sync?: SyncReport;
  /** Extra files deleted (with `delete`; the folders they leave empty go too), relative to the destination. */
  removed: string[];
  /** The audit after the repair: `after.inSync` says whether the mirror is now in sync. */
  after: AuditReport;
}

/**
 * Audits a mirror and repairs what the audit finds: a new baseline reads every file held, keeps the ones that
 * match the Source and fetches the others again (missing or changed: a tampered or damaged mirror), and resets the
 * cursor; with `delete`, the files the Source does not offer are deleted too. Then audits again.
 * @see Z39.99 §5.2 (audit, baseline)
 * @example const r = await repair({ source: 'http://example.com/capabilitylist.xml', dest: './mirror' }); r.after.inSync
 */
export async function repair(options: RepairOptions): Promise<RepairReport> {
  const before = await audit(options);
  if (before.inSync) return { before, removed: [], after: before };
  const { trustState: _trust, onProgress: _progress, ...rest } = options;
  const synced = await sync({ ...rest, baseline: true, delete: options.delete ?? false });
  const removed: string[] = [];
  const storage = options.storage ?? new LocalDirectory(resolve(options.dest));
  let after = await audit(options);
  // the audit lists up to 1,000 extra files at a time: a round per thousand, bounded
  for (let round = 0; options.delete === true && after.extra.length > 0 && round < 1000; round++) {
    let gone = 0;
    for (const path of after.extra) {
      if (await storage.remove(path)) {
        gone++;
        removed.push(path);
      }
    }
    after = await audit(options);
    if (gone === 0) break;
  }
  return { before, sync: synced, removed, after };
}
