import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The repository root (tests run from dist/test/…). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/**
 * The shared specification folder beside the checkout (CI clones with shared/ beside it); a git
 * worktree one level deeper (`<root>/wt/<name>`) finds it two levels up.
 */
export const SPEC_DIR = [join(REPO_ROOT, '..', 'shared', 'spec'), join(REPO_ROOT, '..', '..', 'shared', 'spec')].find((p) => existsSync(p)) ?? join(REPO_ROOT, '..', 'shared', 'spec');
/** Fixtures committed with the tests. */
export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');
