/**
 * `resourcesync demo` (interim): inspects and validates every example of the standard in the shared
 * specification folder (`../shared/spec/examples` beside the package), one line per example.
 * Always exits 0: several walkthrough examples break the standard on purpose.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stdout } from 'node:process';
import { inspectInput } from './inspect.js';
import { validateInput } from './validate.js';

/** The package root: dist/src/cli/commands/ → four levels up. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Runs the demonstration; returns 0. */
export async function run(_args: string[]): Promise<number> {
  const sets: [string, '1.0' | '1.1'][] = [
    ['examples', '1.0'],
    ['examples-1.1', '1.1'],
    ['examples-archives', '1.1'],
  ];
  // Beside the package (a clone next to shared/), or two levels up from a git worktree.
  const candidates = [join(PACKAGE_ROOT, '..', 'shared', 'spec'), join(PACKAGE_ROOT, '..', '..', 'shared', 'spec')];
  const specDir = candidates.find((d) => existsSync(join(d, 'examples'))) ?? candidates[0]!;
  if (!existsSync(join(specDir, 'examples'))) {
    stdout.write(`No examples found at ${join(specDir, 'examples')}: the demo inspects and validates the examples of Z39.99 when the shared spec folder is beside the package.\n`);
    return 0;
  }
  for (const [dir, spec] of sets) {
    const folder = join(specDir, dir);
    if (!existsSync(folder)) continue;
    stdout.write(`\n${dir} (validated against Z39.99 ${spec}):\n`);
    for (const file of readdirSync(folder).filter((f) => f.endsWith('.xml')).sort()) {
      const path = join(folder, file);
      const report = await validateInput(path, { spec, lenient: false });
      let what = 'unreadable';
      try {
        const info = await inspectInput(path);
        what = `${info.name ?? info.capability ?? 'unknown'}, ${info.entries} ${info.entries === 1 ? 'entry' : 'entries'}`;
      } catch {
        // reported by the validation below
      }
      const errors = report.issues.filter((i) => i.severity === 'error');
      const verdict = errors.length === 0 ? 'valid' : `invalid: ${[...new Set(errors.map((i) => i.code))].join(', ')}`;
      stdout.write(`  ${file.padEnd(22)} ${what.padEnd(40)} ${verdict}\n`);
    }
  }
  return 0;
}
