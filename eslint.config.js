// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/.data/', '.demo/', 'coverage/', 'docs/api/'] },
  js.configs.recommended,
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/ban-ts-comment': 'error',
      'no-console': 'error',
    },
  },
  {
    // The library never prints: only src/cli talks to the console, stdout and stderr.
    // (Which layer may import which is checked by dependency-cruiser: .dependency-cruiser.cjs.)
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'stdout', message: 'only src/cli prints' },
        { object: 'process', property: 'stderr', message: 'only src/cli prints' },
      ],
      'no-restricted-imports': [
        'error',
        { name: 'node:process', importNames: ['stdout', 'stderr'], message: 'only src/cli prints' },
        { name: 'process', importNames: ['stdout', 'stderr'], message: 'only src/cli prints' },
        { name: 'node:console', message: 'only src/cli prints' },
        { name: 'console', message: 'only src/cli prints' },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests fake async sources without awaiting; the rules on printing are for the library.
    files: ['src/**/*.test.ts', 'test/**/*.ts'],
    rules: { 'no-restricted-imports': 'off', 'no-restricted-properties': 'off', '@typescript-eslint/require-await': 'off' },
  },
  {
    files: ['bench/**/*.js', 'test/**/*.js', '*.js', 'examples/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', performance: 'readonly', Buffer: 'readonly', fetch: 'readonly' } },
  },
);
