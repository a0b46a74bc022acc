// Lint: type-aware rules that catch lost promises, type-only imports kept as such,
// and import cycles between and inside packages (the dependency direction is
// api -> certs/translator -> store -> mgmt-server/agent -> meshctl).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist-types/**', '**/gen/**', '.tools/**', '.run/**', 'test-artifacts/**', 'bench/.tmp/**', 'packages/mgmt-server/ui/**'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver': { node: { extensions: ['.ts', '.js'] } },
      'import-x/extensions': ['.ts', '.js'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: false }],
      'no-console': 'error',
    },
  },
  {
    // Binaries, scripts, tests and the bench talk to a terminal.
    files: ['**/src/bin/**', 'scripts/**', 'bench/**', '**/test/**', 'e2e/**', 'packages/meshctl/src/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // node:test's test()/describe() return promises the runner awaits itself.
    files: ['**/test/**', 'e2e/**'],
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', name: ['test', 'it', 'describe', 'suite'], package: 'node:test' }] },
      ],
    },
  },
);
