// `npm start` (scripts/run-local.ts) runs a server and two agents on examples/: everything it writes
// belongs to its run directory. Statuses written beside the example manifests once broke the kube
// provider's tests that read that folder, and dirtied a source tree nobody looks at (git-ignored).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { freePort, spawnProcess, waitFor } from '@meshrelay/testkit';
import { ROOT } from './mesh.ts';

/** Every entry under examples/ with its modification time: what a run must leave as it found it. */
function examplesTree(): string[] {
  const dir = join(ROOT, 'examples');
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => join(e.parentPath, e.name))
    .map((path) => `${relative(dir, path)} ${statSync(path).mtimeMs}`)
    .sort();
}

function statusFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml')) : [];
}

test('given npm start with its run directory elsewhere, when the agents have reported resource statuses, then they are in the run directory and examples/ is unchanged', { timeout: 180_000 }, async (t) => {
  const runDir = await mkdtemp(join(tmpdir(), 'meshrelay-run-local-'));
  const before = examplesTree();
  const env = {
    MESHRELAY_LOCAL_RUN_DIR: runDir,
    MESHRELAY_HTTP_PORT: String(await freePort()),
    MESHRELAY_RELAY_PORT: String(await freePort()),
    MESHRELAY_METRICS_PORT: String(await freePort()),
    MESHRELAY_LOCAL_REDIS_PORT: String(await freePort()),
    REDIS_URL: undefined,
  };
  const run = await spawnProcess({ name: 'npm-start', command: process.execPath, args: [join(ROOT, 'scripts/run-local.ts')], cwd: ROOT, env });
  // One hook, in this order: the run keeps writing statuses until it has stopped.
  t.after(async () => {
    await run.stop(5_000);
    await rm(runDir, { recursive: true, force: true });
  });
  await run.waitForLine(/Meshrelay is running/, 60_000);

  await waitFor(() => ['cluster-a', 'cluster-b'].every((c) => statusFiles(join(runDir, c, 'status')).length > 0), {
    timeoutMs: 60_000,
    message: `no resource statuses under ${runDir}/<cluster>/status`,
  });

  assert.deepEqual(examplesTree(), before);
  assert.equal(existsSync(join(ROOT, 'examples', 'cluster-a', '.meshrelay-status')), false);
});
