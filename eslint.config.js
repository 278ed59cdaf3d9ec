// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/.data/', '.demo/', 'coverage/'] },
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
    // Only the CLI talks to the console.
    files: ['src/cli/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // The core is pure: no file system, network, process or clock effects.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:fs', 'node:fs/*', 'fs', 'node:http', 'node:https', 'node:net', 'node:child_process', 'undici'], message: 'core is pure: inject effects from src/node/' },
            { group: ['../source/*', '../destination/*', '../server/*', '../cli/*', '../node/*', '../notify/*'], message: 'layering: core imports nothing above it' },
          ],
        },
      ],
    },
  },
  {
    // Tests may use the file system anywhere, and fake async sources without awaiting.
    files: ['src/**/*.test.ts', 'test/**/*.ts'],
    rules: { 'no-restricted-imports': 'off', '@typescript-eslint/require-await': 'off' },
  },
  {
    files: ['bench/**/*.js', 'test/**/*.js', '*.js', 'examples/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', performance: 'readonly', Buffer: 'readonly', fetch: 'readonly' } },
  },
);
