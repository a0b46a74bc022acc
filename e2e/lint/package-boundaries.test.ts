// The package dependency direction is enforced by lint (ALLOWED_IMPORTS in eslint.config.js):
// these cases run the repository's own ESLint configuration on a fixture file placed inside a
// package, so they fail if the rule is removed or stops matching.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One ESLint for every case: building it (and its TypeScript program) is most of a case's cost. */
let eslint: ESLint | undefined;

/** Lints `source` as a file in packages/<pkg>/<where>/ and returns the no-restricted-imports messages. */
async function boundaryErrors(t: TestContext, pkg: string, where: 'src' | 'test', source: string): Promise<string[]> {
  const file = join(ROOT, 'packages', pkg, where, `boundary-fixture-${randomUUID()}.ts`);
  await writeFile(file, source);
  t.after(() => rm(file, { force: true }));
  eslint ??= new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintFiles([file]);
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

const cases: readonly { pkg: string; where: 'src' | 'test'; source: string; denied: string | null }[] = [
  {
    pkg: 'meshctl',
    where: 'src',
    source: "export type { ManagementServer } from '@meshrelay/mgmt-server';\n",
    denied: 'mgmt-server',
  },
  { pkg: 'meshctl', where: 'test', source: "export { parseAgentConfig } from '@meshrelay/agent';\n", denied: 'agent' },
  {
    pkg: 'meshctl',
    where: 'src',
    source: "export { startManagementServer } from '../../mgmt-server/src/server.ts';\n",
    denied: 'mgmt-server',
  },
  {
    pkg: 'registry',
    where: 'src',
    source: "export type { SnapshotStore } from '@meshrelay/store';\n",
    denied: 'store',
  },
  { pkg: 'api', where: 'src', source: "export type { CaBundle } from '@meshrelay/certs';\n", denied: 'certs' },
  {
    pkg: 'mgmt-server',
    where: 'src',
    source: "export type { ClusterRegistry } from '@meshrelay/registry';\n",
    denied: null,
  },
  { pkg: 'meshctl', where: 'test', source: "export { waitFor } from '@meshrelay/testkit';\n", denied: null },
];

for (const c of cases) {
  const verdict = c.denied === null ? 'then lint accepts it' : `then lint refuses it naming @meshrelay/${c.denied}`;
  test(`given ${c.pkg}/${c.where}, when a file imports ${c.source.match(/'([^']+)'/)?.[1]}, ${verdict}`, async (t) => {
    const errors = await boundaryErrors(t, c.pkg, c.where, c.source);
    if (c.denied === null) {
      assert.deepEqual(errors, []);
      return;
    }
    assert.equal(errors.length, 1, `expected one boundary error, got ${JSON.stringify(errors)}`);
    assert.match(errors[0] ?? '', new RegExp(`must not depend on @meshrelay/${c.denied}:`));
  });
}
