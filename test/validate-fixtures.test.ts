/**
 * One invalid fixture per error code (test/fixtures/invalid/<code>.xml) that yields exactly that
 * error; valid fixtures for the 1.1 specifics; lenient fixtures that only strict mode rejects.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDocument } from '../src/core/xml/read-document.js';
import { ISSUE_CODES, MESSAGES, validate, type ValidateOptions, type ValidationIssue } from '../src/core/validate/index.js';
import { FIXTURES } from './helpers/paths.js';

async function check(file: string, options: ValidateOptions): Promise<ValidationIssue[]> {
  const reader = await readDocument(readFileSync(file));
  return (await validate(reader, options)).issues;
}

/** A fixture may name its version in a comment `<!-- spec: 1.0 -->`; default 1.1. */
function specOf(file: string): '1.0' | '1.1' {
  return /<!-- spec: 1\.0 -->/.test(readFileSync(file, 'utf8')) ? '1.0' : '1.1';
}

const errorCodes = ISSUE_CODES.filter((c) => MESSAGES[c].severity === 'error');

describe('invalid fixtures', () => {
  const dir = join(FIXTURES, 'invalid');
  const files = new Set(readdirSync(dir));
  it('there is one fixture per error code, and no fixture without a code', () => {
    const missing = errorCodes.filter((c) => !files.has(`${c}.xml`));
    assert.deepEqual(missing, []);
    const stray = [...files].filter((f) => !(errorCodes as readonly string[]).includes(f.replace(/\.xml$/, '')));
    assert.deepEqual(stray, []);
  });
  for (const code of errorCodes) {
    it(`${code}.xml yields exactly the error ${code}`, async () => {
      const file = join(dir, `${code}.xml`);
      const issues = await check(file, { spec: specOf(file) });
      const errors = [...new Set(issues.filter((i) => i.severity === 'error').map((i) => i.code))];
      assert.deepEqual(errors, [code], issues.map((i) => `${i.line ?? '-'}: ${i.code}: ${i.message}`).join('\n'));
      const issue = issues.find((i) => i.code === code)!;
      assert.equal(issue.section, issue.section.trim());
      assert.ok(issue.line !== undefined || issue.path !== undefined, 'an issue says where');
    });
  }
});

describe('valid fixtures (1.1 specifics)', () => {
  const dir = join(FIXTURES, 'valid');
  for (const f of readdirSync(dir)) {
    it(`${f} has no errors and no warnings under 1.1`, async () => {
      const issues = await check(join(dir, f), { spec: '1.1' });
      assert.deepEqual(issues, []);
    });
  }
  it('the 1.1 Change List without lastmod is invalid under 1.0', async () => {
    const issues = await check(join(dir, 'changelist-1.1-datetime.xml'), { spec: '1.0' });
    assert.ok(issues.some((i) => i.code === 'lastmod-missing' && i.severity === 'error'));
    assert.ok(issues.some((i) => i.code === 'datetime-unexpected' && i.severity === 'warning'));
  });
});

describe('lenient fixtures', () => {
  const dir = join(FIXTURES, 'lenient');
  it('what real producers publish fails strict mode and passes lenient mode with tolerated-* warnings', async () => {
    const file = join(dir, 'changelist-real-world.xml');
    const strict = await check(file, { spec: '1.1' });
    // (times without a zone are not W3C Datetimes, so strict mode cannot order them)
    assert.deepEqual([...new Set(strict.filter((i) => i.severity === 'error').map((i) => i.code))].sort(), [
      'datetime-invalid',
      'hash-not-hex',
      'up-link-missing',
    ]);
    const lenient = await check(file, { spec: '1.1', mode: 'lenient' });
    assert.equal(lenient.filter((i) => i.severity === 'error').length, 0);
    assert.deepEqual([...new Set(lenient.map((i) => i.code))].sort(), [
      'tolerated-datetime-no-zone',
      'tolerated-hash-encoding',
      'tolerated-out-of-order',
      'tolerated-up-link-missing',
    ]);
  });
  for (const [name, strict, lenient] of [
    ['capabilitylist-draft-modified.xml', ['attribute-not-namespaced'], ['tolerated-draft-modified-ignored']],
    ['description-draft-modified.xml', ['attribute-not-namespaced'], ['tolerated-draft-modified-ignored']],
    ['resourcedump-completed-before-at.xml', ['completed-before-at'], ['tolerated-completed-before-at']],
    [
      'changelistindex-at-not-from.xml',
      ['at-forbidden', 'from-missing'],
      ['tolerated-at-instead-of-from', 'tolerated-from-missing'],
    ],
    ['description-entry-resourcelist.xml', ['entry-capability-invalid'], ['tolerated-description-entry-capability']],
  ] as const) {
    it(`${name}: ${strict.join(', ')} in strict mode, ${lenient.join(', ')} in lenient mode`, async () => {
      const file = join(dir, name);
      const errors = (await check(file, {})).filter((i) => i.severity === 'error').map((i) => i.code);
      assert.deepEqual([...new Set(errors)].sort(), [...strict]);
      const read = await check(file, { mode: 'lenient' });
      assert.deepEqual(read.filter((i) => i.severity === 'error'), []);
      const tolerated = read.filter((i) => i.code.startsWith('tolerated-')).map((i) => i.code);
      assert.deepEqual([...new Set(tolerated)].sort(), [...lenient]);
    });
  }
  it('changelistindex is an error in strict mode and tolerated in lenient mode', async () => {
    const file = join(dir, 'capabilitylist-changelistindex.xml');
    assert.deepEqual((await check(file, {})).map((i) => i.code), ['capability-index-name']);
    assert.deepEqual((await check(file, { mode: 'lenient' })).map((i) => i.code), ['tolerated-capability-index-name']);
  });
});
