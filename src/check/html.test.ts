import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderCheckHtml } from './html.js';
import type { CheckReport } from './report.js';

const URL_ = 'http://127.0.0.1:8080/.resourcesync/site/resourcedump-00001.zip?part=2&x=1#manifest.xml';

function report(): CheckReport {
  return {
    start: 'http://127.0.0.1:8080/',
    capabilityLists: [],
    documents: [
      { url: URL_, kind: 'resource-list', at: '2026-01-01T00:00:00Z', entries: 1, bytes: 2, errors: 1, warnings: 0 },
    ],
    issues: [
      {
        code: 'manifest-resourcelist-disagrees',
        severity: 'error',
        url: URL_,
        message: 'm <b>',
        section: 'Z39.99 §11.2',
        line: 5,
      },
    ],
    sampled: 0,
    resources: 0,
    linkHeaders: 0,
    errors: 1,
    warnings: 0,
    conformant: false,
    durationMs: 1,
    notes: [],
  };
}

void test('the HTML report keeps codes on one line and breaks URLs only after / ? # & =', () => {
  const page = renderCheckHtml(report());
  const css = /<style>([\s\S]*)<\/style>/.exec(page)?.[1] ?? '';
  // nothing breaks anywhere inside a word
  assert.doesNotMatch(css, /break-all|overflow-wrap:\s*anywhere/);
  assert.match(css, /code[^{]*\{[^}]*white-space:\s*nowrap/);
  assert.match(page, /<td><code>manifest-resourcelist-disagrees<\/code><\/td>/);
  // the URL cells offer a break after each separator, and read as the URL without them
  const cells = [...page.matchAll(/<td class="url">(.*?)<\/td>/g)].map((m) => m[1]!);
  assert.equal(cells.length, 2);
  for (const cell of cells) {
    assert.match(
      cell,
      /^http:\/<wbr>\/<wbr>127\.0\.0\.1:8080\/<wbr>\.resourcesync\/<wbr>site\/<wbr>resourcedump-00001\.zip\?<wbr>/,
    );
    assert.ok(cell.replace(/<wbr>/g, '').replace(/&amp;/g, '&').startsWith(URL_), cell);
  }
  assert.match(page, /m &lt;b&gt;/);
});
