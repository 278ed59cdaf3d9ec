import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHECK_CODES, CHECK_MESSAGES, checkMessage } from './issues.js';
import { escapeHtml } from './html.js';

void test('every check code has a severity, a section and a message, and nothing else is in the table', () => {
  assert.deepEqual(Object.keys(CHECK_MESSAGES).sort(), [...CHECK_CODES].sort());
  for (const code of CHECK_CODES) {
    const d = CHECK_MESSAGES[code];
    assert.ok(d.severity === 'error' || d.severity === 'warning', code);
    assert.ok(d.section.length > 0 && d.message.length > 0, code);
  }
});

void test('messages fill their placeholders; missing ones become empty', () => {
  assert.equal(
    checkMessage('changelists-gap', { loc: 'http://e.com/cl2.xml', from: 'A', until: 'B' }),
    "Change List 'http://e.com/cl2.xml' starts at A, after the previous one ends (B): changes in between are not covered",
  );
  assert.doesNotMatch(checkMessage('manifest-missing', {}), /\{/);
});

void test('HTML escaping covers markup and attribute quotes', () => {
  assert.equal(
    escapeHtml(`<a href="x" onclick='y'>&</a>`),
    '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
  );
});
