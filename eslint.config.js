// Lint: type-aware rules that catch lost promises, type-only imports kept as such,
// import cycles between and inside packages, and which package may import which (the
// dependency direction is api -> certs/translator -> store/kube/registry -> mgmt-server/agent
// -> meshctl; see packageBoundaries below).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

/**
 * Which workspace packages each package may import (its src/ and test/). Everything else under
 * @meshrelay/ — and the same packages reached by a relative path — is an error, so a dependency
 * against the direction fails lint. Tests may also use @meshrelay/testkit; src/ never may.
 */
const ALLOWED_IMPORTS = {
  api: [],
  certs: ['api'],
  translator: ['api'],
  xds: ['api'],
  store: ['api'],
  kube: ['api'],
  testkit: ['api', 'certs'],
  registry: ['api', 'certs', 'translator'],
  'mgmt-server': ['api', 'certs', 'translator', 'store', 'kube', 'registry'],
  agent: ['api', 'certs', 'translator', 'kube', 'xds'],
  meshctl: ['api', 'kube', 'registry'],
};
// Tests may also use the other side of the protocol they test: the agent's relay tests run
// against the real management server, never a second implementation of it.
const TEST_ALSO = { agent: ['mgmt-server'] };
const PACKAGES = Object.keys(ALLOWED_IMPORTS);

function forbidden(pkg, allowed, where) {
  const denied = PACKAGES.filter((other) => other !== pkg && !allowed.includes(other));
  return {
    files: [`packages/${pkg}/${where}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: denied.map((other) => ({
            group: [`@meshrelay/${other}`, `@meshrelay/${other}/*`, `**/${other}/src/**`, `**/${other}/test/**`],
            message: `@meshrelay/${pkg} (${where}/) must not depend on @meshrelay/${other}: dependencies point api -> certs/translator -> store/kube/registry -> mgmt-server/agent -> meshctl (see ALLOWED_IMPORTS in eslint.config.js)`,
          })),
        },
      ],
    },
  };
}

function packageBoundaries() {
  return PACKAGES.flatMap((pkg) => [
    forbidden(pkg, ALLOWED_IMPORTS[pkg], 'src'),
    forbidden(pkg, [...ALLOWED_IMPORTS[pkg], 'testkit', ...(TEST_ALSO[pkg] ?? [])], 'test'),
  ]);
}

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist-types/**',
      '**/gen/**',
      '.tools/**',
      '.run/**',
      'test-artifacts/**',
      'bench/.tmp/**',
      'packages/mgmt-server/ui/**',
    ],
  },
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
      // prettier keeps code within 120 columns but leaves comments alone; this holds both.
      // Strings, template literals, regular expressions and URLs may run longer (splitting them hides them).
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
  ...packageBoundaries(),
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
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['test', 'it', 'describe', 'suite'], package: 'node:test' },
          ],
        },
      ],
    },
  },
);
