/**
 * The public surface is chosen, not accumulated: every name each entry point of package.json exports, values and
 * types, is listed in test/fixtures/exports.txt, and this test fails when the two differ. Changing the surface is
 * a visible act: run `RESOURCESYNC_UPDATE_EXPORTS=1 node --test dist/test/exports.test.js` and commit the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { FIXTURES, REPO_ROOT } from './helpers/paths.js';

const SNAPSHOT = join(FIXTURES, 'exports.txt');

/** package.json "exports" entries that are modules: `resourcesync/x` → `dist/src/x/index.js`. */
function entryPoints(): { name: string; dist: string; source: string }[] {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string> };
  return Object.entries(pkg.exports)
    .filter(([, target]) => target.endsWith('.js'))
    .map(([key, target]) => ({
      name: key === '.' ? 'resourcesync' : `resourcesync/${key.slice(2)}`,
      dist: join(REPO_ROOT, target),
      source: join(REPO_ROOT, target.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')),
    }));
}

/** Every exported name of each entry, `value` or `type`, as the compiler sees the source. */
function declaredExports(entries: readonly { name: string; source: string }[]): Map<string, Map<string, 'value' | 'type'>> {
  const program = ts.createProgram(
    entries.map((e) => e.source),
    { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true },
  );
  const checker = program.getTypeChecker();
  const out = new Map<string, Map<string, 'value' | 'type'>>();
  for (const entry of entries) {
    const file = program.getSourceFile(entry.source);
    assert.ok(file, `${entry.source} compiles`);
    const moduleSymbol = checker.getSymbolAtLocation(file);
    assert.ok(moduleSymbol, `${entry.source} is a module`);
    const names = new Map<string, 'value' | 'type'>();
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      names.set(symbol.name, target.flags & ts.SymbolFlags.Value ? 'value' : 'type');
    }
    out.set(entry.name, names);
  }
  return out;
}

function render(all: Map<string, Map<string, 'value' | 'type'>>): string {
  const lines: string[] = [];
  for (const [entry, names] of all) {
    const sorted = [...names].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const values = sorted.filter(([, k]) => k === 'value').length;
    lines.push(`# ${entry}: ${names.size} names (${values} values, ${names.size - values} types)`);
    for (const [name, kind] of sorted) lines.push(`${entry} ${kind} ${name}`);
  }
  return `${lines.join('\n')}\n`;
}

test('every entry point exports exactly the names in test/fixtures/exports.txt', async () => {
  const entries = entryPoints();
  const declared = declaredExports(entries);
  for (const entry of entries) {
    const runtime = Object.keys((await import(pathToFileURL(entry.dist).href)) as object).sort();
    const values = [...declared.get(entry.name)!].filter(([, k]) => k === 'value').map(([n]) => n).sort();
    assert.deepEqual(runtime, values, `${entry.name}: the built module exports the declared values`);
  }
  const actual = render(declared);
  if (process.env['RESOURCESYNC_UPDATE_EXPORTS'] === '1') writeFileSync(SNAPSHOT, actual);
  assert.equal(actual, readFileSync(SNAPSHOT, 'utf8'), 'the public surface changed: review it, then update test/fixtures/exports.txt');
});
