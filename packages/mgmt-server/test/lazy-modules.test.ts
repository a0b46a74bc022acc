// What a process loads at start: the server with the file registry, and any process that imports
// the server, registry, kube or test packages, never loads @kubernetes/client-node (or the test
// kit's browser driver) until it uses them (docs/design/decisions/README.md#lazy-kube-client).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const PACKAGE_DIR = resolve(import.meta.dirname, '..');
const SERVER_BIN = join(PACKAGE_DIR, 'bin', 'meshrelay-server.js');
const WATCHED = ['@kubernetes/client-node', 'playwright-core'];

/** Runs node with a resolve hook that reports, at exit, which of WATCHED were resolved and from where. */
function loadedBy(args: readonly string[]): Record<string, string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-lazy-modules-'));
  try {
    const hook = join(dir, 'hook.mjs');
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
const watched = ${JSON.stringify(WATCHED)};
const seen = {};
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    // Only where the process enters the package (its own modules importing each other are not news).
    for (const name of watched) {
      const inside = '/node_modules/' + name + '/';
      const from = String(context.parentURL);
      if (result.url.includes(inside) && !from.includes(inside) && !(seen[name] ??= []).includes(from)) seen[name].push(from);
    }
    return result;
  },
});
process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(seen) + '\\n'));
`,
    );
    const run = spawnSync(process.execPath, ['--import', hook, ...args], {
      cwd: PACKAGE_DIR,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, MESHRELAY_MALLOC_TUNING: 'off' },
    });
    const line = run.stderr.split('\n').find((l) => l.startsWith('LOADED '));
    assert.ok(line, `the process reported nothing (status ${run.status}): ${run.stderr.slice(0, 2000)}`);
    return JSON.parse(line.slice('LOADED '.length)) as Record<string, string[]>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test(
  'given the packages a test or a tool imports, when they are imported, then neither client-node nor the browser driver is loaded',
  { timeout: 120_000 },
  () => {
    const imports = ['@meshrelay/mgmt-server', '@meshrelay/registry', '@meshrelay/kube', '@meshrelay/testkit'];
    const script = imports.map((m) => `await import(${JSON.stringify(m)});`).join('');
    assert.deepEqual(loadedBy(['--input-type=module', '-e', script]), {});
  },
);

test(
  'given the server binary, when it starts and answers --help, then it has not loaded client-node',
  { timeout: 120_000 },
  () => {
    assert.deepEqual(loadedBy([SERVER_BIN, '--help']), {});
  },
);

test(
  'given a process that loads the kubeconfig, when it does, then client-node is loaded (the hook sees it)',
  { timeout: 120_000 },
  () => {
    const script =
      "const { loadKubeConfig } = await import('@meshrelay/kube'); try { loadKubeConfig({ kubeconfig: '/nonexistent' }); } catch {}";
    const loaded = loadedBy(['--input-type=module', '-e', script]);
    assert.ok(
      loaded['@kubernetes/client-node']?.some((from) => from.includes('kube-client.ts')),
      JSON.stringify(loaded),
    );
  },
);
