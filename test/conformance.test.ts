/**
 * Conformance over the examples of the standard: every example parses and gets the verdict that
 * the normative text gives it. Several walkthrough examples (§1.3, §4–5) are fragments that leave
 * out what the normative sections require; the expected errors below quote the rule each breaks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDocument } from '../src/core/xml/read-document.js';
import { validate } from '../src/core/validate/index.js';
import type { IssueCode } from '../src/core/validate/index.js';
import { SPEC_DIR } from './helpers/paths.js';

type Verdicts = Record<string, { errors: IssueCode[]; why?: string }>;

/** §10.1 (and §10.2, §11.1, §11.2, §12.1): "A mandatory <rs:ln> child element … points to the Capability List with the relation type up." */
const NO_UP = 'walkthrough fragment without the mandatory <rs:ln rel="up"> (Z39.99 §10.1, §10.2, §11.1, §11.2, §12.1: "A mandatory <rs:ln> child element … with the relation type up")';
/** §7 `hash`: "Each hash value is represented by a hex-encoded digest". */
const NOT_HEX = 'its sha-256 values are not hex ("Each hash value is represented by a hex-encoded digest", Z39.99 §7)';

function verdicts(all: string[], invalid: Verdicts): Verdicts {
  const out: Verdicts = {};
  for (const f of all) out[f] = invalid[f] ?? { errors: [] };
  return out;
}

const CORE_INVALID: Verdicts = {
  'ex01.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Resource List
  'ex02.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Resource List with hashes
  'ex03.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Change List
  'ex04.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Resource Dump
  'ex05.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Resource Dump Manifest
  'ex08.xml': { errors: ['up-link-missing'], why: NO_UP }, // §1.3 Resource List Index
  'ex27.xml': { errors: ['hash-not-hex'], why: NOT_HEX }, // §14.4 patches: base64-like digests
};

function examples(dir: string): string[] {
  return readdirSync(join(SPEC_DIR, dir))
    .filter((f) => f.endsWith('.xml'))
    .sort();
}

async function errorsOf(file: string, spec: '1.0' | '1.1'): Promise<{ codes: IssueCode[]; kind: string | undefined }> {
  const reader = await readDocument(readFileSync(file));
  const { issues } = await validate(reader, { spec });
  return { codes: [...new Set(issues.filter((i) => i.severity === 'error').map((i) => i.code))].sort(), kind: reader.kind?.id };
}

const SETS: { dir: string; spec: '1.0' | '1.1'; invalid: Verdicts; count: number }[] = [
  // The 30 XML examples of Z39.99-2014, under 1.0.
  { dir: 'examples', spec: '1.0', invalid: CORE_INVALID, count: 30 },
  // The same examples as revised for 1.1 (datetime, optional lastmod): the same seven break the rules.
  { dir: 'examples-1.1', spec: '1.1', invalid: CORE_INVALID, count: 30 },
  // ResourceSync Archives: all valid, under both versions.
  { dir: 'examples-archives', spec: '1.1', invalid: {}, count: 7 },
  { dir: 'examples-archives', spec: '1.0', invalid: {}, count: 7 },
];

for (const set of SETS) {
  describe(`${set.dir} under ResourceSync ${set.spec}`, () => {
    const files = examples(set.dir);
    it(`has the ${set.count} examples`, () => {
      assert.equal(files.length, set.count);
    });
    for (const [file, expected] of Object.entries(verdicts(files, set.invalid))) {
      it(`${file}: ${expected.errors.length ? `invalid (${expected.errors.join(', ')})` : 'valid'}`, async () => {
        const { codes, kind } = await errorsOf(join(SPEC_DIR, set.dir, file), set.spec);
        assert.ok(kind, `${file} is identified as a ResourceSync document`);
        assert.deepEqual(codes, [...expected.errors].sort(), expected.why ?? `${file} follows the normative text`);
      });
    }
  });
}

describe('1.0 and 1.1 differ where the standard changed', () => {
  it('the 1.1 Change List of Example 19 (no lastmod on some changes) is invalid under 1.0 only', async () => {
    const file = join(SPEC_DIR, 'examples-1.1', 'ex19.xml');
    assert.deepEqual((await errorsOf(file, '1.1')).codes, []);
    // Z39.99-2014 §12.1: "A mandatory <lastmod> … child element"; 1.0 does not define datetime either.
    assert.deepEqual((await errorsOf(file, '1.0')).codes, ['lastmod-missing']);
  });
  it('the 1.1 Change List of Example 3 is out of order by lastmod, in order by datetime', async () => {
    const file = join(SPEC_DIR, 'examples-1.1', 'ex03.xml');
    // Its third change has lastmod 2011-01-01 (the resource's last modification, 1.1 §7) after changes of 2013.
    assert.deepEqual((await errorsOf(file, '1.0')).codes, ['changes-out-of-order', 'lastmod-missing', 'up-link-missing']);
    assert.deepEqual((await errorsOf(file, '1.1')).codes, ['up-link-missing']);
  });
});
