import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyJsonPatch,
  formatPointer,
  isJsonPatchMediaType,
  jsonEqual,
  parsePointer,
  resolvePointer,
  type JsonValue,
} from './json-patch.js';
import { isResourceSyncError } from './errors.js';

const patchError = (err: unknown) => isResourceSyncError(err, 'RS_PATCH');

void test('JSON Pointer: RFC 6901 §5 examples', () => {
  const doc = JSON.parse(
    '{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\\\j":5,"k\\"l":6," ":7,"m~n":8}',
  ) as JsonValue;
  assert.deepEqual(resolvePointer(doc, ''), doc);
  assert.deepEqual(resolvePointer(doc, '/foo'), ['bar', 'baz']);
  assert.equal(resolvePointer(doc, '/foo/0'), 'bar');
  assert.equal(resolvePointer(doc, '/'), 0);
  assert.equal(resolvePointer(doc, '/a~1b'), 1);
  assert.equal(resolvePointer(doc, '/c%d'), 2);
  assert.equal(resolvePointer(doc, '/i\\j'), 5);
  assert.equal(resolvePointer(doc, '/k"l'), 6);
  assert.equal(resolvePointer(doc, '/ '), 7);
  assert.equal(resolvePointer(doc, '/m~0n'), 8);
  assert.equal(resolvePointer(doc, '/foo/01'), undefined);
  assert.equal(resolvePointer(doc, '/nope/x'), undefined);
  assert.deepEqual(parsePointer('/~01'), ['~1']);
  assert.equal(formatPointer(['a/b', '~c']), '/a~1b/~0c');
  assert.throws(() => parsePointer('a'), patchError);
  assert.throws(() => parsePointer('/a~2'), patchError);
});

const ERR = new Error('the patch fails');
// RFC 6902 Appendix A, one case per row: [name, doc, patch, expected result or ERR]
const cases: Array<[string, JsonValue, unknown, JsonValue | Error]> = [
  ['A.1 add object member', { foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }], { baz: 'qux', foo: 'bar' }],
  [
    'A.2 add array element',
    { foo: ['bar', 'baz'] },
    [{ op: 'add', path: '/foo/1', value: 'qux' }],
    { foo: ['bar', 'qux', 'baz'] },
  ],
  ['A.3 remove object member', { baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }], { foo: 'bar' }],
  [
    'A.4 remove array element',
    { foo: ['bar', 'qux', 'baz'] },
    [{ op: 'remove', path: '/foo/1' }],
    { foo: ['bar', 'baz'] },
  ],
  [
    'A.5 replace',
    { baz: 'qux', foo: 'bar' },
    [{ op: 'replace', path: '/baz', value: 'boo' }],
    { baz: 'boo', foo: 'bar' },
  ],
  [
    'A.6 move value',
    { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
    [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
    { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  ],
  [
    'A.7 move array element',
    { foo: ['all', 'grass', 'cows', 'eat'] },
    [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
    { foo: ['all', 'cows', 'eat', 'grass'] },
  ],
  [
    'A.8 test success',
    { baz: 'qux', foo: ['a', 2, 'c'] },
    [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ],
    { baz: 'qux', foo: ['a', 2, 'c'] },
  ],
  ['A.9 test error', { baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }], ERR],
  [
    'A.10 add nested member',
    { foo: 'bar' },
    [{ op: 'add', path: '/child', value: { grandchild: {} } }],
    { foo: 'bar', child: { grandchild: {} } },
  ],
  [
    'A.11 ignore unrecognized elements',
    { foo: 'bar' },
    [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 }],
    { foo: 'bar', baz: 'qux' },
  ],
  ['A.12 add to nonexistent target', { foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }], ERR],
  ['A.14 ~ escape ordering', { '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: 10 }], { '/': 9, '~1': 10 }],
  ['A.15 comparing strings and numbers', { '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: '10' }], ERR],
  [
    'A.16 add array value',
    { foo: ['bar'] },
    [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }],
    { foo: ['bar', ['abc', 'def']] },
  ],
  ['replace whole document', { a: 1 }, [{ op: 'replace', path: '', value: [1] }], [1]],
  ['add whole document', { a: 1 }, [{ op: 'add', path: '', value: 'x' }], 'x'],
  [
    'copy',
    { a: { b: [1] } },
    [
      { op: 'copy', from: '/a/b', path: '/c' },
      { op: 'add', path: '/c/-', value: 2 },
    ],
    { a: { b: [1] }, c: [1, 2] },
  ],
  ['copy missing from', { a: 1 }, [{ op: 'copy', from: '/x', path: '/c' }], ERR],
  ['move into own child', { a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }], ERR],
  ['move onto itself', { a: 1 }, [{ op: 'move', from: '/a', path: '/a' }], { a: 1 }],
  ['remove missing', { a: 1 }, [{ op: 'remove', path: '/b' }], ERR],
  ['replace missing', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], ERR],
  ['array index past end', { a: [1] }, [{ op: 'add', path: '/a/2', value: 1 }], ERR],
  ['leading zero index', { a: [1, 2] }, [{ op: 'remove', path: '/a/01' }], ERR],
  ['remove with -', { a: [1, 2] }, [{ op: 'remove', path: '/a/-' }], ERR],
  ['unknown op', { a: 1 }, [{ op: 'frob', path: '/a' }], ERR],
  ['missing value', { a: 1 }, [{ op: 'add', path: '/b' }], ERR],
  ['null value is a value', { a: 1 }, [{ op: 'add', path: '/b', value: null }], { a: 1, b: null }],
  ['not an array', { a: 1 }, { op: 'add', path: '/b', value: 1 }, ERR],
  [
    'test unordered object',
    { a: { x: 1, y: [1, { z: 2 }] } },
    [{ op: 'test', path: '/a', value: { y: [1, { z: 2 }], x: 1 } }],
    { a: { x: 1, y: [1, { z: 2 }] } },
  ],
  ['test array order', { a: [1, 2] }, [{ op: 'test', path: '/a', value: [2, 1] }], ERR],
];

for (const [name, doc, patch, expected] of cases) {
  void test(`JSON Patch: ${name}`, () => {
    const before = JSON.stringify(doc);
    if (expected instanceof Error) {
      assert.throws(() => applyJsonPatch(doc, patch), patchError);
    } else {
      assert.deepEqual(applyJsonPatch(doc, patch), expected);
    }
    assert.equal(JSON.stringify(doc), before, 'the input is never modified');
  });
}

void test('JSON Patch: replace keeps the member order', () => {
  assert.equal(
    JSON.stringify(applyJsonPatch({ a: 1, b: 2, c: 3 }, [{ op: 'replace', path: '/a', value: 9 }])),
    '{"a":9,"b":2,"c":3}',
  );
});

void test('JSON Patch: a failing operation leaves no partial result (atomic)', () => {
  const doc: JsonValue = { a: 1 };
  assert.throws(
    () =>
      applyJsonPatch(doc, [
        { op: 'add', path: '/b', value: 2 },
        { op: 'test', path: '/a', value: 2 },
      ]),
    patchError,
  );
  assert.deepEqual(doc, { a: 1 });
});

void test('JSON Patch: a member named __proto__ stays data and never reaches the prototype', () => {
  const out = applyJsonPatch({}, [{ op: 'add', path: '/__proto__', value: { polluted: true } }]) as Record<
    string,
    unknown
  >;
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.deepEqual(Object.keys(out), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(JSON.stringify(out), '{"__proto__":{"polluted":true}}');
  const parsed = JSON.parse('{"__proto__":{"x":1}}') as JsonValue;
  const copied = applyJsonPatch(parsed, [{ op: 'copy', from: '/__proto__', path: '/y' }]) as Record<string, unknown>;
  assert.deepEqual(copied.y, { x: 1 });
  assert.equal(Object.getPrototypeOf(copied), Object.prototype);
});

void test('jsonEqual and media types', () => {
  assert.ok(jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: null }] }));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!jsonEqual([1], { 0: 1 }));
  assert.ok(isJsonPatchMediaType('application/json-patch+json'));
  assert.ok(isJsonPatchMediaType('Application/JSON-Patch+JSON; charset=utf-8'));
  assert.ok(isJsonPatchMediaType('application/json-patch'));
  assert.ok(!isJsonPatchMediaType('application/x-tiff-diff'));
  assert.ok(!isJsonPatchMediaType(undefined));
});
