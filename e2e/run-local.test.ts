// `npm start` (scripts/run-local.ts) runs a server and two agents on examples/: everything it writes
// belongs to its run directory. Statuses written beside the example manifests once broke the kube
// provider's tests that read that folder, and dirtied a source tree nobody looks at (git-ignored).
// It also runs the proxyless gRPC demo (examples/grpc-demo/): the agents serve xDS, and a
// grpc-js-xds client in cluster-a reaches the greeters of both clusters through greeter.global.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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

/** The clusters named in the demo client's log lines `call N: <cluster> answered (...)`. */
function answeredBy(log: string): Set<string> {
  return new Set([...log.matchAll(/call \d+: (\S+) answered/g)].map((m) => m[1] as string));
}

/**
 * What a failed demo check needs to be understood afterwards: what the run printed besides the
 * client's calls and Redis (greeters, agents, server), and the greeter.global ServiceEntry that
 * cluster-a's agent applied (the endpoints its xDS serves the client).
 */
function demoDiagnosis(lines: readonly string[], runDir: string): string {
  const told = lines.filter((l) => !l.startsWith('[grpc-demo] call') && !l.startsWith('[redis]')).slice(-120);
  const entry = join(runDir, 'cluster-a', 'output', 'current', 'ServiceEntry.greeter.greeter-global-vd.yaml');
  const applied = existsSync(entry) ? readFileSync(entry, 'utf8') : `(${entry} does not exist)`;
  return [
    'the run printed (besides calls and Redis):',
    ...told.map((l) => `  | ${l}`),
    "cluster-a's applied greeter.global ServiceEntry:",
    ...applied.split('\n').map((l) => `  | ${l}`),
  ].join('\n');
}

test(
  'given npm start with its run directory elsewhere, when the agents have reported resource statuses, then they are in the run directory and examples/ is unchanged',
  { timeout: 180_000 },
  async (t) => {
    const runDir = await mkdtemp(join(tmpdir(), 'meshrelay-run-local-'));
    const before = examplesTree();
    const env = {
      MESHRELAY_LOCAL_RUN_DIR: runDir,
      MESHRELAY_HTTP_PORT: String(await freePort()),
      MESHRELAY_RELAY_PORT: String(await freePort()),
      MESHRELAY_METRICS_PORT: String(await freePort()),
      MESHRELAY_LOCAL_REDIS_PORT: String(await freePort()),
      MESHRELAY_XDS_PORTS: `${await freePort()},${await freePort()}`,
      REDIS_URL: undefined,
    };
    const run = await spawnProcess({
      name: 'npm-start',
      command: process.execPath,
      args: [join(ROOT, 'scripts/run-local.ts')],
      cwd: ROOT,
      env,
    });
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

    await t.test(
      "when the gRPC demo client calls greeter.global through cluster-a's agent, then both clusters' greeters answer, on stdout and in its log",
      async () => {
        try {
          await run.waitForLine(/\[grpc-demo\] call \d+: cluster-a answered \(127\.0\.0\.71:17071\)/, 60_000);
          await run.waitForLine(/\[grpc-demo\] call \d+: cluster-b answered \(127\.0\.0\.72:17071\)/, 60_000);
        } catch (err) {
          throw new Error(`${(err as Error).message}\n${demoDiagnosis(run.lines, runDir)}`, { cause: err });
        }
        const log = join(runDir, 'grpc-demo', 'client.log');
        await waitFor(() => existsSync(log) && answeredBy(readFileSync(log, 'utf8')).size === 2, {
          timeoutMs: 10_000,
          message: `${log} does not show answers from both clusters`,
        });
        assert.deepEqual([...answeredBy(readFileSync(log, 'utf8'))].sort(), ['cluster-a', 'cluster-b']);
      },
    );
  },
);
