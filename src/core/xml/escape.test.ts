import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeAttribute, escapeText, isNcName, isXmlChars } from './escape.js';
import { isResourceSyncError } from '../errors.js';

void test('escapeText leaves plain text untouched (same string)', () => {
  const s = 'http://example.com/res1?x=y#z é 漢字 😀';
  assert.equal(escapeText(s), s);
  assert.equal(escapeAttribute(s), s);
});

void test('escapeText escapes & < > and CR, keeps tab, newline and quotes', () => {
  assert.equal(escapeText('a&b<c>d'), 'a&amp;b&lt;c&gt;d');
  assert.equal(escapeText(']]>'), ']]&gt;');
  assert.equal(escapeText('"q" \'s\''), '"q" \'s\'');
  assert.equal(escapeText('t\tn\nr\r'), 't\tn\nr&#13;');
  assert.equal(escapeText('&&'), '&amp;&amp;');
  assert.equal(escapeText('&amp;'), '&amp;amp;');
});

void test('escapeAttribute escapes & < > " and tab, newline, CR as character references', () => {
  assert.equal(escapeAttribute('a&b<c>d"e\'f'), "a&amp;b&lt;c&gt;d&quot;e'f");
  assert.equal(escapeAttribute('\t\n\r'), '&#9;&#10;&#13;');
  assert.equal(escapeAttribute('x\r\ny'), 'x&#13;&#10;y');
});

void test('valid surrogate pairs and the edges of the allowed ranges pass', () => {
  assert.equal(escapeText('\uD83D\uDE00<'), '\uD83D\uDE00&lt;');
  assert.equal(escapeAttribute('\uFFFD\uE000\uD7FF\u0020'), '\uFFFD\uE000\uD7FF\u0020');
  assert.equal(escapeText('\uDBFF\uDFFF&'), '\uDBFF\uDFFF&amp;');
});

void test('characters XML 1.0 does not allow throw RS_INVALID_ARGUMENT naming the value', () => {
  const bad = [
    '\u0000',
    '\u0001',
    '\u0008',
    '\u000B',
    '\u000C',
    '\u000E',
    '\u001F',
    '\uD800',
    'a\uDBFFb',
    '\uDC00',
    'x\uDFFF',
    '\uFFFE',
    '\uFFFF',
  ];
  for (const ch of bad) {
    for (const fn of [escapeText, escapeAttribute]) {
      const value = `ok ${ch} & more`;
      assert.throws(
        () => fn(value, 'loc'),
        (err: unknown) => {
          assert.ok(isResourceSyncError(err, 'RS_INVALID_ARGUMENT'));
          assert.match(err.message, /^loc "ok /);
          assert.match(err.message, /U\+[0-9A-F]{4}/);
          assert.equal(err.data.value, value);
          assert.equal(err.data.index, ch.length > 1 ? 4 : 3);
          return true;
        },
        JSON.stringify(ch),
      );
    }
    assert.equal(isXmlChars(`a${ch}`), false);
  }
  assert.equal(isXmlChars('a\tb\n\r\uD83D\uDE00'), true);
});

void test('isNcName accepts prefixes and local names, refuses the rest', () => {
  for (const ok of ['dc', 'a1', '_x', 'foo.bar-baz', 'é']) assert.equal(isNcName(ok), true, ok);
  for (const bad of ['', '1a', 'a:b', 'a b', '-x', 'a"b', '.x']) assert.equal(isNcName(bad), false, bad);
});
