/**
 * What real producers publish (test/fixtures/producers, sources in its README), through the command line
 * as users run it: `resourcesync validate --lenient` accepts each document (exit 0) and names every
 * tolerance it applied; strict `validate` rejects it (exit 1) with the errors the standard gives.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, REPO_ROOT } from './helpers/paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const DIR = join(FIXTURES, 'producers');

interface Report {
  documents: { kind: string | null; entries: number; valid: boolean; issues: { code: string; severity: string }[] }[];
}

function validate(file: string, ...flags: string[]): Promise<{ code: number; report: Report }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [MAIN, 'validate', '--json', ...flags, file], { timeout: 60_000 }, (err, stdout) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      try {
        resolve({ code, report: JSON.parse(stdout) as Report });
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

interface Expectation {
  spec: '1.0' | '1.1';
  kind: string;
  /** Codes of the errors strict mode reports. */
  strict: string[];
  /** Codes of the tolerated-* warnings lenient mode reports. */
  tolerated: string[];
}

const EXPECTED: Record<string, Expectation> = {
  'resync-build/resourcelist.xml': { spec: '1.1', kind: 'resource-list', strict: [], tolerated: [] },
  'resync-build/changelist.xml': {
    spec: '1.1',
    kind: 'change-list',
    strict: ['from-missing'],
    tolerated: ['tolerated-from-missing'],
  },
  'resync-build/changelist-1.0.xml': {
    spec: '1.0',
    kind: 'change-list',
    strict: ['changes-out-of-order', 'from-missing', 'up-link-missing'],
    tolerated: ['tolerated-from-missing', 'tolerated-out-of-order', 'tolerated-up-link-missing'],
  },
  'resync-build/capabilitylist.xml': {
    spec: '1.1',
    kind: 'capability-list',
    strict: ['up-link-missing'],
    tolerated: ['tolerated-up-link-missing'],
  },
  'resync-build/resourcedump-manifest.xml': {
    spec: '1.1',
    kind: 'resource-dump-manifest',
    strict: ['at-missing', 'path-not-absolute', 'up-link-missing'],
    tolerated: ['tolerated-at-missing', 'tolerated-path-relative', 'tolerated-up-link-missing'],
  },
  'resync-simulator/changelist-1.0.xml': {
    spec: '1.0',
    kind: 'change-list',
    strict: ['lastmod-missing'],
    tolerated: ['tolerated-lastmod-missing'],
  },
  'resync-simulator/changelist-1.1.xml': { spec: '1.1', kind: 'change-list', strict: [], tolerated: [] },
  'resync-simulator/capabilitylist.xml': { spec: '1.1', kind: 'capability-list', strict: [], tolerated: [] },
  'resync-0.6-spec/resourcelist-modified.xml': {
    spec: '1.0',
    kind: 'resource-list',
    strict: ['attribute-not-namespaced', 'up-link-missing'],
    tolerated: ['tolerated-draft-modified', 'tolerated-up-link-missing'],
  },
  'resync-0.6-spec/changelist-modified.xml': {
    spec: '1.0',
    kind: 'change-list',
    strict: ['attribute-not-namespaced', 'from-missing', 'up-link-missing'],
    tolerated: ['tolerated-draft-modified', 'tolerated-from-missing', 'tolerated-up-link-missing'],
  },
  'constructed/changedump-manifest-space-relative.xml': {
    spec: '1.1',
    kind: 'change-dump-manifest',
    strict: ['datetime-invalid', 'path-not-absolute'],
    tolerated: ['tolerated-datetime-space', 'tolerated-path-relative'],
  },
  'constructed/changelist-second-md.xml': {
    spec: '1.1',
    kind: 'change-list',
    strict: ['md-repeated'],
    tolerated: ['tolerated-md-merged'],
  },
  'constructed/capabilitylist-duplicate.xml': {
    spec: '1.1',
    kind: 'capability-list',
    strict: ['capability-duplicate'],
    tolerated: ['tolerated-capability-duplicate'],
  },
  'constructed/changelist-until-before-from.xml': {
    spec: '1.1',
    kind: 'change-list',
    // the inverted interval also puts the change outside it; leniently, the interval is open at its end
    strict: ['datetime-outside-interval', 'until-before-from'],
    tolerated: ['tolerated-until-before-from'],
  },
  'constructed/resourcelist-relative-loc.xml': {
    spec: '1.1',
    kind: 'resource-list',
    strict: ['loc-not-absolute'],
    tolerated: ['tolerated-loc-relative'],
  },
};

const sorted = (codes: Iterable<string>): string[] => [...new Set(codes)].sort();

void describe('documents real producers publish (test/fixtures/producers)', () => {
  void it('every fixture is expected here and named in the README', () => {
    const readme = readFileSync(join(DIR, 'README.md'), 'utf8');
    const files = readdirSync(DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .flatMap((d) => readdirSync(join(DIR, d.name)).map((f) => `${d.name}/${f}`));
    const xml = files.filter((f) => f.endsWith('.xml'));
    assert.deepEqual(xml.sort(), Object.keys(EXPECTED).sort());
    for (const f of files) assert.ok(readme.includes(`\`${f.slice(f.indexOf('/') + 1)}\``), `${f} is named in the README`);
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    void it(`${name}: strict ${expected.strict.length === 0 ? 'accepts it' : `reports ${expected.strict.join(', ')}`}; lenient accepts it${expected.tolerated.length === 0 ? '' : ` with ${expected.tolerated.join(', ')}`}`, async () => {
      const file = join(DIR, name);
      const strict = await validate(file, '--spec', expected.spec);
      const s = strict.report.documents[0]!;
      assert.equal(s.kind, expected.kind);
      assert.ok(s.entries > 0);
      assert.deepEqual(sorted(s.issues.filter((i) => i.severity === 'error').map((i) => i.code)), expected.strict);
      assert.equal(strict.code, expected.strict.length === 0 ? 0 : 1);

      const lenient = await validate(file, '--spec', expected.spec, '--lenient');
      const l = lenient.report.documents[0]!;
      assert.equal(lenient.code, 0, JSON.stringify(l.issues));
      assert.equal(l.valid, true);
      assert.deepEqual(l.issues.filter((i) => i.severity === 'error'), []);
      assert.deepEqual(sorted(l.issues.filter((i) => i.code.startsWith('tolerated-')).map((i) => i.code)), expected.tolerated);
    });
  }
});
