import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

/** The repository root (tests run from dist/test/…). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The shared specification folder beside the checkout (CI clones with shared/ beside it). A git
 * worktree may sit deeper (e.g. /work/wt/<name>), so the nearest ancestor's `shared/spec` is used;
 * `RS_SPEC_DIR` overrides.
 */
export const SPEC_DIR = process.env.RS_SPEC_DIR ?? findSpecDir(REPO_ROOT);

function findSpecDir(from: string): string {
  for (let dir = join(from, '..'); ; dir = dirname(dir)) {
    const candidate = join(dir, 'shared', 'spec');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return join(from, '..', 'shared', 'spec');
  }
}

/** Fixtures committed with the tests. */
export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');
