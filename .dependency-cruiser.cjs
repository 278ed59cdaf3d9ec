/**
 * The layers of src/ and what each may import (see the table in CONTRIBUTING.md):
 *
 *   core ← node ← client ← notify ← destination ← check ← web
 *   core ← node ← source
 *   core ← node ← server
 *   live  imports source, server, notify, check, web, client
 *   oai   imports client, source, live (the OAI-PMH client and the bridge)
 *   aggregate imports what live imports, destination and live (its embedded hub)
 *   cli   imports everything
 *
 * A module imports only from its own folder and the folders its row names. `source` and `destination`
 * never import each other; `core` is pure: no file system, network or process module, and no npm package.
 * Tests (*.test.ts, test/) may import across layers; production code never imports tests.
 * Run: `npm run layers` (part of `npm test`).
 */

/** Each layer and the layers it may import (besides itself). */
const MAY_IMPORT = {
  core: [],
  node: ['core'],
  client: ['core', 'node'],
  notify: ['core', 'node', 'client'],
  source: ['core', 'node'],
  destination: ['core', 'node', 'client', 'notify'],
  check: ['core', 'node', 'client', 'destination'],
  web: ['core', 'node', 'client', 'check'],
  server: ['core', 'node'],
  live: ['core', 'node', 'client', 'notify', 'source', 'server', 'check', 'web'],
  oai: ['core', 'node', 'client', 'notify', 'source', 'server', 'live'],
  aggregate: ['core', 'node', 'client', 'notify', 'source', 'server', 'check', 'web', 'destination', 'live'],
};
const LAYERS = [...Object.keys(MAY_IMPORT), 'cli'];
const ABOVE = Object.fromEntries(
  Object.entries(MAY_IMPORT).map(([layer, may]) => [layer, LAYERS.filter((l) => l !== layer && !may.includes(l))]),
);

const TESTS = ['\\.test\\.ts$', '^test/'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...Object.entries(ABOVE).map(([layer, above]) => ({
      name: `layer-${layer}`,
      comment: `src/${layer} imports only from the layers below it: not from ${above.map((a) => `src/${a}`).join(', ')}.`,
      severity: 'error',
      from: { path: `^src/${layer}/`, pathNot: TESTS },
      to: { path: `^src/(${above.join('|')})/` },
    })),
    {
      name: 'core-is-pure',
      comment: 'src/core has no file system, network or process effects: take them as options, with defaults from src/node.',
      severity: 'error',
      from: { path: '^src/core/', pathNot: TESTS },
      to: {
        dependencyTypes: ['core'],
        path: '^(fs|fs/promises|http|https|http2|net|tls|dgram|dns|child_process|cluster|worker_threads|process|os)$',
      },
    },
    {
      name: 'core-no-packages',
      comment: 'src/core depends on no npm package (network clients, SQLite and ZIP libraries belong in the layers above).',
      severity: 'error',
      from: { path: '^src/core/', pathNot: TESTS },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'no-tests-in-production',
      comment: 'Production code never imports tests or their helpers.',
      severity: 'error',
      from: { path: '^src/', pathNot: TESTS },
      to: { path: TESTS },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles in production code.',
      severity: 'error',
      from: { path: '^src/', pathNot: TESTS },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
