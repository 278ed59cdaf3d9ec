/**
 * Every import the documentation shows works through the package's name and its exports map, as it
 * does for a user who installed the package: README.md, CONTRIBUTING.md, docs/*.md and the comments
 * of src/ are scanned for `import { … } from 'resourcesync…'`. A child process imports each entry
 * point by name (Node resolves the package's own name from inside it) and lists what it exports at
 * run time; the TypeScript compiler checks every name, types included, against the declarations.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './helpers/paths.js';

interface DocumentedImport {
  where: string;
  specifier: string;
  names: { name: string; type: boolean }[];
}

const IMPORT = /import\s+(type\s+)?\{([^}]*)\}\s*from\s*'(resourcesync(?:\/[^']*)?)'/g;

function documentedFiles(): string[] {
  const files = ['README.md', 'CONTRIBUTING.md'].map((f) => join(REPO_ROOT, f));
  for (const f of readdirSync(join(REPO_ROOT, 'docs'))) if (f.endsWith('.md')) files.push(join(REPO_ROOT, 'docs', f));
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) files.push(path);
    }
  };
  walk(join(REPO_ROOT, 'src'));
  return files;
}

function documentedImports(): DocumentedImport[] {
  const out: DocumentedImport[] = [];
  for (const file of documentedFiles()) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(IMPORT)) {
      const allTypes = m[1] !== undefined;
      const names = m[2]!
        .split(',')
        .map((s) => s.replace(/^\s*\*\s*/gm, '').trim())
        .filter((s) => s !== '')
        .map((s) => {
          const type = allTypes || s.startsWith('type ');
          return {
            name: s
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)[0]!
              .trim(),
            type,
          };
        });
      out.push({ where: relative(REPO_ROOT, file), specifier: m[3]!, names });
    }
  }
  return out;
}

const PACKAGE = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string>;
};
const ENTRY_POINTS = Object.keys(PACKAGE.exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? 'resourcesync' : `resourcesync/${k.slice(2)}`));

/** What each specifier exports at run time, imported by a separate Node process from the repository root. */
function runtimeExports(specifiers: string[]): Record<string, string[] | { error: string }> {
  const script = `
    const out = {};
    for (const s of ${JSON.stringify(specifiers)}) {
      try { out[s] = Object.keys(await import(s)); } catch (e) { out[s] = { error: String(e.code ?? e.message) }; }
    }
    process.stdout.write(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as Record<string, string[] | { error: string }>;
}

/** TypeScript's errors for a module made of the given import statements, resolved as a user's NodeNext project would. */
function typeErrors(statements: string[]): string[] {
  const file = join(REPO_ROOT, 'documented-imports.check.ts');
  const source = statements.join(';\n') + ';\nexport {};\n';
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (f) => (f === file ? source : readFile(f));
  host.fileExists = (f) => f === file || fileExists(f);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, ...rest) =>
    f === file ? ts.createSourceFile(f, source, lang, true, ts.ScriptKind.TS) : getSourceFile(f, lang, ...rest);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('documented imports', () => {
  const imports = documentedImports();

  it('the documentation shows imports from every entry point of the exports map', () => {
    assert.ok(imports.length >= 5, `found ${imports.length}`);
    const shown = new Set(imports.map((i) => i.specifier));
    for (const entry of ENTRY_POINTS) assert.ok(shown.has(entry), `no documented import from ${entry}`);
  });

  it('every entry point and every documented value loads through the package name', () => {
    const specifiers = [...new Set([...ENTRY_POINTS, ...imports.map((i) => i.specifier)])];
    const loaded = runtimeExports(specifiers);
    for (const s of specifiers) {
      const got = loaded[s];
      assert.ok(Array.isArray(got), `${s}: ${JSON.stringify(got)}`);
    }
    for (const imp of imports) {
      const names = loaded[imp.specifier] as string[];
      for (const n of imp.names.filter((x) => !x.type)) {
        assert.ok(names.includes(n.name), `${imp.where}: ${imp.specifier} does not export ${n.name}`);
      }
    }
  });

  it('every documented name, types included, type-checks through the package name', () => {
    // Each name under a local alias of its own, so that the same name shown twice is no duplicate.
    const statements = imports.map((imp, k) => {
      const names = imp.names.map((n, i) => `${n.type ? 'type ' : ''}${n.name} as _${k}_${i}`);
      return `import { ${names.join(', ')} } from '${imp.specifier}'`;
    });
    const errors = typeErrors(statements);
    assert.deepEqual(errors, []);
  });
});
