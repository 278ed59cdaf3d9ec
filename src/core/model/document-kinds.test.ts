import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DOCUMENT_KINDS,
  archivedKind,
  documentKindById,
  indexedKind,
  isIndex,
  isPartOf,
  manifestKind,
  type DocumentKindId,
} from './document-kinds.js';

const k = documentKindById;

void test('an index lists the documents whose index link names its kind: a Resource List Index Resource Lists, a Change List Index Change Lists…', () => {
  const pairs: [DocumentKindId, DocumentKindId][] = [
    ['source-description-index', 'source-description'],
    ['capability-list-index', 'capability-list'],
    ['resource-list-index', 'resource-list'],
    ['resource-dump-index', 'resource-dump'],
    ['change-list-index', 'change-list'],
    ['change-dump-index', 'change-dump'],
    ['resource-list-archive-index', 'resource-list-archive'],
    ['resource-dump-archive-index', 'resource-dump-archive'],
    ['change-list-archive-index', 'change-list-archive'],
    ['change-dump-archive-index', 'change-dump-archive'],
  ];
  assert.deepEqual(
    DOCUMENT_KINDS.filter(isIndex).map((x) => [x.id, indexedKind(x)?.id]),
    pairs,
  );
  for (const [index, part] of pairs) {
    assert.equal(isPartOf(k(part), k(index)), true, `${part} in ${index}`);
    // §6.1: an index has the capability of the documents it groups, and groups `<urlset>` documents
    assert.equal(k(index).capability, k(part).capability, index);
    assert.equal(k(part).root, 'urlset', part);
  }
  for (const x of DOCUMENT_KINDS.filter((d) => !isIndex(d))) assert.equal(indexedKind(x), undefined, x.id);
});

void test('a part of another kind is not a part of an index', () => {
  assert.equal(isPartOf(k('change-list'), k('resource-list-index')), false);
  assert.equal(isPartOf(k('resource-list'), k('change-list-index')), false);
  assert.equal(isPartOf(k('resource-dump'), k('change-dump-index')), false);
  assert.equal(
    isPartOf(k('change-list'), k('change-list-archive-index')),
    false,
    'an index of archives lists archives',
  );
  assert.equal(isPartOf(k('resource-list-index'), k('resource-list-index')), false, 'indexes do not nest');
  assert.equal(isPartOf(k('resource-list'), k('resource-list')), false, 'a list is no index');
  assert.equal(isPartOf(undefined, k('resource-list-index')), false, 'an unknown kind');
  assert.equal(isPartOf(k('resource-list'), undefined), false);
});

void test('an archive lists past documents of the kind whose archives link names it', () => {
  assert.deepEqual(
    DOCUMENT_KINDS.flatMap((x) => {
      const archived = archivedKind(x);
      return archived === undefined ? [] : [[x.id, archived.id]];
    }),
    [
      ['resource-list-archive', 'resource-list'],
      ['resource-dump-archive', 'resource-dump'],
      ['change-list-archive', 'change-list'],
      ['change-dump-archive', 'change-dump'],
    ],
  );
  assert.equal(
    archivedKind(k('change-list-archive-index')),
    undefined,
    'an index of archives lists archives, not lists',
  );
  assert.equal(indexedKind(k('change-list-archive-index'))?.id, 'change-list-archive');
});

void test('the packages of a dump carry the manifest of its kind', () => {
  assert.deepEqual(
    DOCUMENT_KINDS.flatMap((x) => {
      const manifest = manifestKind(x);
      return manifest === undefined ? [] : [[x.id, manifest.id]];
    }),
    [
      ['resource-dump', 'resource-dump-manifest'],
      ['change-dump', 'change-dump-manifest'],
    ],
  );
  for (const id of ['resource-dump-index', 'change-dump-index', 'resource-dump-manifest'] as const)
    assert.equal(manifestKind(k(id)), undefined, id);
});
