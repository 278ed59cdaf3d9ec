/**
 * `resourcesync demo` (the README's main job, `npm start`): publishes the bundled sample collection
 * (`examples/sample-collection`) as a ResourceSync Source with the Source server on 127.0.0.1 (a free port),
 * mirrors it into `./.demo/mirror` with `sync`, checks the mirror with `audit`, then changes the Source (one file
 * created, one updated, one deleted), publishes again and runs an incremental `sync` and a second `audit`.
 * Prints what happened; nothing to configure. Exit 0 when the mirror ends in sync.
 */
import { cpSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cwd, stdout } from 'node:process';
import { sync, type SyncReport } from '../../destination/sync.js';
import { createLiveSource } from '../../live/live-source.js';
import { audit, type AuditReport } from '../../destination/audit.js';

/** The package root: dist/src/cli/commands/ → four levels up. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function line(text = ''): void {
  stdout.write(`${text}\n`);
}

function syncLine(r: SyncReport): string {
  return `${r.mode} sync: ${r.created} created, ${r.updated} updated, ${r.deleted} deleted, ${r.unchanged} unchanged, ${r.failed.length} failed (${(r.bytes / 1024).toFixed(1)} KB in ${r.durationMs} ms)`;
}

function auditLine(r: AuditReport): string {
  return `audit: ${r.inSync ? 'in sync' : 'OUT OF SYNC'}: ${r.total} resources on offer, ${r.unchanged} verified unchanged, ${r.counts.missing} missing, ${r.counts.changed} changed, ${r.counts.extra} extra`;
}

/** Runs the demonstration. */
export async function run(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    line('Usage: resourcesync demo\n\nPublishes examples/sample-collection on 127.0.0.1, mirrors it into ./.demo/mirror with sync, audits it,');
    line('changes the Source and syncs again (incremental). Exit 0 when the mirror ends in sync.');
    return 0;
  }
  const work = resolve(cwd(), '.demo');
  const collection = join(PACKAGE_ROOT, 'examples', 'sample-collection');
  const sourceDir = join(work, 'source', 'sample');
  const outDir = join(work, 'publish');
  const stateDir = join(work, 'source-state');
  const mirror = join(work, 'mirror');
  rmSync(work, { recursive: true, force: true });
  cpSync(collection, sourceDir, { recursive: true });

  // The Source is published once it listens (the base URL holds the port), and again after the changes below.
  const source = await createLiveSource({
    sets: [{ name: 'sample', dir: sourceDir }],
    port: 0,
    host: '127.0.0.1',
    stateDir,
    outDir,
    publish: { hashes: ['md5', 'sha-256'] },
    watch: false,
  });
  try {
    const url = source.url;
    const baseUrl = `${url}/`;
    const published = await source.ready();
    line(`Source: ${published.resources} resources of examples/sample-collection published at ${url}`);
    line(`  Source Description: ${published.sourceDescription}`);

    line(`\n$ resourcesync sync ${url}/ .demo/mirror --delete`);
    const first = await sync({ source: baseUrl, dest: mirror, delete: true });
    line(`  ${syncLine(first)}`);
    for (const w of first.warnings) line(`  warning: ${w.message}`);
    line(`\n$ resourcesync audit ${url}/ .demo/mirror`);
    const a1 = await audit({ source: baseUrl, dest: mirror });
    line(`  ${auditLine(a1)}`);

    // The Source changes: one file created, one updated, one deleted; then it publishes again.
    writeFileSync(join(sourceDir, 'notes', 'new-note.txt'), 'Written after the first sync.\n');
    appendFileSync(join(sourceDir, 'poems', 'river.txt'), 'And the mirror keeps up.\n');
    rmSync(join(sourceDir, 'recipes', 'soup.txt'));
    const again = await source.publishNow();
    line(`\nThe Source changed (${again.changes.created} created, ${again.changes.updated} updated, ${again.changes.deleted} deleted) and published its Change List.`);
    line(`\n$ resourcesync sync ${url}/ .demo/mirror --delete`);
    const second = await sync({ source: baseUrl, dest: mirror, delete: true });
    line(`  ${syncLine(second)}`);
    for (const w of second.warnings) line(`  warning: ${w.message}`);
    line(`\n$ resourcesync audit ${url}/ .demo/mirror`);
    const a2 = await audit({ source: baseUrl, dest: mirror });
    line(`  ${auditLine(a2)}`);
    line(`\nThe mirror is in ${mirror} (its state in .demo/mirror/.resourcesync/); compare: diff -r --exclude=.resourcesync .demo/source/sample .demo/mirror`);
    const ok = a1.inSync && a2.inSync && first.failed.length === 0 && second.failed.length === 0;
    return ok ? 0 : 1;
  } finally {
    await source.close();
  }
}
