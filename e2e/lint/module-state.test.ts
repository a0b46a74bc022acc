// State a reader can see (DESIGN §16, "Where remembered work lives"): a module-level weak table is
// only a brand or a memo of an immutable value, and each one is listed in the design; the process's
// own settings (V8 flags, restarting itself) live only in each binary's runtime module.
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DESIGN = join(ROOT, 'docs/design/16-cost-follows-the-change.md');
const SOURCES = globSync('packages/*/src/**/*.ts', { cwd: ROOT }).filter((f) => !f.includes('/gen/'));
const RUNTIME_MODULES = ['packages/mgmt-server/src/runtime.ts', 'packages/agent/src/runtime.ts'];

/** `file:name` of each weak table declared at the top level of a module. */
function moduleWeakTables(): string[] {
  return SOURCES.flatMap((file) =>
    [
      ...readFileSync(join(ROOT, file), 'utf8').matchAll(
        /^(?:export )?(?:const|let) (\w+)(?::[^=\n]+)? = new Weak(?:Map|Set)\b/gm,
      ),
    ].map((m) => `${file}:${m[1]}`),
  );
}

/** `file:name` of each table the design lists. */
function listedTables(): string[] {
  return [...readFileSync(DESIGN, 'utf8').matchAll(/^\| `([\w/.-]+\.ts)` \| `(\w+)` \|/gm)].map(
    (m) => `packages/${m[1]}:${m[2]}`,
  );
}

test('given the sources, when their module-level weak tables are listed, then each is in the design, and the design lists no other', () => {
  const found = moduleWeakTables().sort();
  const listed = listedTables().sort();
  assert.ok(found.length > 0 && listed.length > 0, 'the scan and the table both read something');
  assert.deepEqual(
    found.filter((t) => !listed.includes(t)),
    [],
    'module-level weak tables not listed in docs/design/16-cost-follows-the-change.md: give the state an owner, or list it there as a brand or a memo',
  );
  assert.deepEqual(
    listed.filter((t) => !found.includes(t)),
    [],
    'the design lists tables the sources no longer have',
  );
});

test('given the sources, when they set V8 flags or start their process again, then only the binaries’ runtime modules do', () => {
  const tuning = SOURCES.filter((file) =>
    /setFlagsFromString\(|process\.execve\(/.test(readFileSync(join(ROOT, file), 'utf8')),
  );
  assert.deepEqual(tuning.sort(), [...RUNTIME_MODULES].sort());
  for (const bin of ['packages/mgmt-server/bin/meshrelay-server.js', 'packages/agent/bin/meshrelay-agent.js'])
    assert.doesNotMatch(readFileSync(join(ROOT, bin), 'utf8'), /setFlagsFromString\(|process\.execve\(/, bin);
});
