import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../test/helpers/paths.js';
import { NOTES, NOTE_CODES, gapNote, note } from './notes.js';

void describe('Destination notes', () => {
  void it('a note carries its code, the severity of its row, its data and the message made from them', () => {
    const n = note('outside-authority', { url: 'http://elsewhere.example/cl.xml' });
    assert.deepEqual(n, {
      code: 'outside-authority',
      severity: 'warning',
      data: { url: 'http://elsewhere.example/cl.xml' },
      message: "'http://elsewhere.example/cl.xml' is outside the authority: not fetched.",
    });
    assert.equal(note('http-status', { url: 'http://e.example/x', status: 404 }).severity, 'note');
  });

  void it('a gap says what the sync does about it in data.remedy, and its message follows', () => {
    const gap = { url: 'http://e.example/changelist.xml', start: '2026-01-02T00:00:00Z', cursor: '2026-01-01T00:00:00Z' };
    const plain = gapNote(gap);
    assert.deepEqual(plain.data, gap);
    assert.equal(
      plain.message,
      "The changes on offer at 'http://e.example/changelist.xml' start at '2026-01-02T00:00:00Z', after the last change processed '2026-01-01T00:00:00Z': changes were missed.",
    );
    const archive = gapNote({ ...plain.data, archive: 'http://e.example/archive.xml' }, 'archive');
    assert.deepEqual(archive.data, { ...gap, archive: 'http://e.example/archive.xml', remedy: 'archive' });
    assert.equal(archive.message, `${plain.message} Catching up from the Change List Archive 'http://e.example/archive.xml'.`);
    // a remedy given before is replaced, not kept
    assert.equal(gapNote(archive.data, 'baseline').data.remedy, 'baseline');
    assert.equal(gapNote(archive.data).data.remedy, undefined);
    const dumps = gapNote({ ...gap, dumps: true, snapshot: '2025-12-31T00:00:00Z' }, 'lag');
    assert.equal(
      dumps.message,
      "The Change Dump packages at 'http://e.example/changelist.xml' start at '2026-01-02T00:00:00Z', after the last change applied '2026-01-01T00:00:00Z': changes were missed. The mirror holds the snapshot of '2025-12-31T00:00:00Z' and may lag until the next baseline.",
    );
  });

  void it('a validator issue passed on keeps its code, line and count in data', () => {
    const n = note('document-issues', { url: 'http://e.example/rl.xml', issue: 'tolerated-out-of-order', section: 'Z39.99 §12.1', issueMessage: 'entries out of order', line: 7, count: 3 });
    assert.equal(n.message, "Document 'http://e.example/rl.xml' (line 7): entries out of order [tolerated-out-of-order, Z39.99 §12.1, 3 times].");
    assert.equal(note('document-issues', { url: 'u', issue: 'lastmod-missing', section: 'S', issueMessage: 'm', count: 1 }).message, "Document 'u': m [lastmod-missing, S].");
  });

  void it('codes are kebab-case and unique, and every row has a meaning', () => {
    assert.equal(new Set(NOTE_CODES).size, NOTE_CODES.length);
    for (const code of NOTE_CODES) {
      assert.match(code, /^[a-z0-9]+(-[a-z0-9]+)*$/);
      assert.ok(NOTES[code].meaning.length > 0, code);
    }
  });

  void it('docs/destination.md lists every code with its severity and meaning', async () => {
    const doc = await readFile(`${REPO_ROOT}docs/destination.md`, 'utf8');
    for (const code of NOTE_CODES) {
      assert.ok(doc.includes(`| \`${code}\` | ${NOTES[code].severity} | ${NOTES[code].meaning} |`), code);
    }
    const listed = [...doc.matchAll(/^\| `([a-z0-9-]+)` \| (?:note|warning) \|/gm)].map((m) => m[1]);
    assert.deepEqual(listed, NOTE_CODES);
  });
});
