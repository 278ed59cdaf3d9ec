import { ResourceSyncError } from './errors.js';

/**
 * JSON Patch (RFC 6902) and JSON Pointer (RFC 6901), pure. Used to apply a patch link
 * (`rel="http://www.openarchives.org/rs/terms/patch"`, `type="application/json-patch+json"`) to the
 * Destination's copy of a JSON resource.
 * @see Z39.99 §14.4
 */

/** A JSON value as produced by `JSON.parse`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Media types of a JSON Patch document (RFC 6902 §6; Z39.99 Example 27 writes the older `application/json-patch`). */
const JSON_PATCH_MEDIA_TYPES = ['application/json-patch+json', 'application/json-patch'] as const;

/** True when a `type` attribute names a JSON Patch document (parameters such as `; charset=utf-8` are ignored). */
export function isJsonPatchMediaType(type: string | undefined): boolean {
  if (type === undefined) return false;
  const bare = type.split(';')[0]!.trim().toLowerCase();
  return (JSON_PATCH_MEDIA_TYPES as readonly string[]).includes(bare);
}

function fail(message: string, data: Record<string, unknown> = {}): ResourceSyncError {
  return new ResourceSyncError('RS_PATCH', message, { data, recoverable: true });
}

/**
 * Splits a JSON Pointer into its unescaped reference tokens (`~1` → `/`, `~0` → `~`).
 * @example parsePointer('/a~1b/~0c') // ['a/b', '~c']
 * @see RFC 6901 §3, §4
 */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw fail(`JSON Pointer '${pointer}' does not start with '/'.`, { pointer });
  return pointer
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~(?![01])/.test(token)) throw fail(`JSON Pointer '${pointer}' has an invalid '~' escape.`, { pointer });
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

/** Formats reference tokens as a JSON Pointer (`/` → `~1`, `~` → `~0`). @see RFC 6901 §3 */
export function formatPointer(tokens: readonly string[]): string {
  return tokens.map((t) => '/' + t.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

function isObject(v: JsonValue | undefined): v is { [key: string]: JsonValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Array index per RFC 6901 §4: `0` or digits without a leading zero. */
function arrayIndex(token: string, length: number, allowEnd: boolean, pointer: string): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token))
    throw fail(`JSON Pointer '${pointer}' has a non-index token '${token}' for an array.`, { pointer });
  const i = Number(token);
  if (i > (allowEnd ? length : length - 1))
    throw fail(`JSON Pointer '${pointer}' indexes past the end of an array.`, { pointer });
  return i;
}

/** Resolves a pointer in `doc`, or undefined when it names nothing. @see RFC 6901 §4 */
export function resolvePointer(doc: JsonValue, pointer: string): JsonValue | undefined {
  let cur: JsonValue | undefined = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else if (isObject(cur)) {
      cur = Object.hasOwn(cur, token) ? cur[token] : undefined;
    } else {
      return undefined;
    }
  }
  return cur;
}

/** Structural equality of JSON values: objects regardless of member order, arrays in order. @see RFC 6902 §4.6 */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function clone(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(clone);
  if (isObject(v)) {
    const out: { [key: string]: JsonValue } = {};
    for (const k of Object.keys(v)) setOwn(out, k, clone(v[k]!));
    return out;
  }
  return v;
}

/** Sets an own data property, so that a member named `__proto__` stays data and never touches the prototype. */
function setOwn(obj: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The container holding the target of `pointer` and the last token. */
function parentOf(doc: JsonValue, pointer: string): { parent: JsonValue; key: string } {
  const tokens = parsePointer(pointer);
  const key = tokens.pop()!;
  const parent = resolvePointer(doc, formatPointer(tokens));
  if (parent === undefined) throw fail(`JSON Patch path '${pointer}': the parent does not exist.`, { path: pointer });
  return { parent, key };
}

function addAt(doc: JsonValue, pointer: string, value: JsonValue): JsonValue {
  if (pointer === '') return value;
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, true, pointer), 0, value);
  else if (isObject(parent)) setOwn(parent, key, value);
  else throw fail(`JSON Patch path '${pointer}': the parent is not a container.`, { path: pointer });
  return doc;
}

function removeAt(doc: JsonValue, pointer: string): { doc: JsonValue; removed: JsonValue } {
  if (pointer === '') throw fail(`JSON Patch cannot remove the whole document.`, { path: pointer });
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) {
    const i = arrayIndex(key, parent.length, false, pointer);
    return { doc, removed: parent.splice(i, 1)[0]! };
  }
  if (isObject(parent) && Object.hasOwn(parent, key)) {
    const removed = parent[key]!;
    delete parent[key];
    return { doc, removed };
  }
  throw fail(`JSON Patch path '${pointer}' does not exist.`, { path: pointer });
}

function str(op: Record<string, unknown>, name: string, i: number): string {
  const v = op[name];
  if (typeof v !== 'string') throw fail(`JSON Patch operation ${i} lacks a string '${name}'.`, { index: i });
  return v;
}

function val(op: Record<string, unknown>, i: number): JsonValue {
  if (!Object.hasOwn(op, 'value')) throw fail(`JSON Patch operation ${i} lacks 'value'.`, { index: i });
  return op.value as JsonValue;
}

/**
 * Applies a JSON Patch document to `doc` and returns the result; `doc` is not modified. The patch is
 * atomic: any failing operation (including a failed `test`) throws `RS_PATCH` and nothing is returned.
 * @example applyJsonPatch({ a: 1 }, [{ op: 'replace', path: '/a', value: 2 }]) // { a: 2 }
 * @see RFC 6902 §4, §5; Z39.99 §14.4
 */
export function applyJsonPatch(doc: JsonValue, patch: unknown): JsonValue {
  if (!Array.isArray(patch)) throw fail('JSON Patch document is not an array.');
  let out = clone(doc);
  patch.forEach((raw: unknown, i) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw fail(`JSON Patch operation ${i} is not an object.`, { index: i });
    const op = raw as Record<string, unknown>;
    const path = str(op, 'path', i);
    switch (op.op) {
      case 'add':
        out = addAt(out, path, clone(val(op, i)));
        break;
      case 'remove':
        out = removeAt(out, path).doc;
        break;
      case 'replace': {
        const value = clone(val(op, i));
        if (resolvePointer(out, path) === undefined)
          throw fail(`JSON Patch path '${path}' does not exist.`, { path, index: i });
        if (path === '') out = value;
        else {
          // In place, so that an object member keeps its position (serializations stay comparable).
          const { parent, key } = parentOf(out, path);
          if (Array.isArray(parent)) parent[arrayIndex(key, parent.length, false, path)] = value;
          else setOwn(parent as { [key: string]: JsonValue }, key, value);
        }
        break;
      }
      case 'move': {
        const from = str(op, 'from', i);
        if (from === path) break;
        if (path.startsWith(from + '/'))
          throw fail(`JSON Patch moves '${from}' into its own child '${path}'.`, { path, from, index: i });
        if (resolvePointer(out, from) === undefined)
          throw fail(`JSON Patch 'from' '${from}' does not exist.`, { from, index: i });
        const r = removeAt(out, from);
        out = addAt(r.doc, path, r.removed);
        break;
      }
      case 'copy': {
        const from = str(op, 'from', i);
        const v = resolvePointer(out, from);
        if (v === undefined) throw fail(`JSON Patch 'from' '${from}' does not exist.`, { from, index: i });
        out = addAt(out, path, clone(v));
        break;
      }
      case 'test': {
        const actual = resolvePointer(out, path);
        if (!jsonEqual(actual, val(op, i))) throw fail(`JSON Patch test at '${path}' failed.`, { path, index: i });
        break;
      }
      default:
        throw fail(`JSON Patch operation ${i} has an unknown op '${String(op.op)}'.`, { index: i });
    }
  });
  return out;
}
