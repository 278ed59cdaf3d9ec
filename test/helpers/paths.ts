import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The repository root (tests run from dist/test/…). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Fixtures committed with the tests. */
export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');

/** The XML examples of the standard (Z39.99-2014, 1.1 and Archives), committed in test/fixtures/spec. */
export const SPEC_DIR = join(FIXTURES, 'spec');
