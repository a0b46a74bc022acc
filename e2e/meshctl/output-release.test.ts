import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HeldOutput } from '@meshrelay/meshctl';
import { apiGet, meshctlAt, startServer, type RunningServer } from './harness.ts';

const HASH = 'a'.repeat(64);

/** Registers `cluster` and has the blast-radius guard hold an output for it. */
async function holdOutput(running: RunningServer, cluster: string): Promise<void> {
  assert.equal((await meshctlAt(running.url, ['cluster', 'register', cluster])).code, 0);
  running.server.held.hold(
    {
      cluster,
      hash: HASH,
      reason: 'delete-share',
      message: 'would delete 3 of 4 resources (75 % > 50 %)',
      deleted: 3,
      held: 4,
      missingClusters: [],
    },
    new Date(),
  );
}

test('given a cluster with nothing held, when its output is released, then meshctl exits 1 with one line', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['output', 'release', 'east']);

  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.equal(
    result.stderr,
    'meshctl: MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: no output is held for cluster "east" (POST /api/v1/clusters/east/output/release, HTTP 404)\n',
  );
});

test('given a held output, when it is released, then meshctl prints its hash and deletions, exits 0, and nothing is held any more', async (t) => {
  const running = await startServer(t);
  await holdOutput(running, 'east');

  const result = await meshctlAt(running.url, ['output', 'release', 'east']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `Released the output held for cluster "east": hash ${HASH}, deleting 3 of the 4 resources its agent holds (held for: would delete 3 of 4 resources (75 % > 50 %)).\n`,
  );
  assert.equal(running.server.held.get('east'), undefined);
  const held = await apiGet<{ held: HeldOutput[] }>(running, '/api/v1/outputs/held');
  assert.deepEqual(held.held, []);
});

test('given a held output, when it is released with -o json, then the raw answer is printed', async (t) => {
  const running = await startServer(t);
  await holdOutput(running, 'east');

  const result = await meshctlAt(running.url, ['output', 'release', 'east', '-o', 'json']);

  assert.equal(result.code, 0, result.stderr);
  const answer = JSON.parse(result.stdout) as { released: HeldOutput };
  assert.equal(answer.released.cluster, 'east');
  assert.equal(answer.released.hash, HASH);
  assert.equal(answer.released.deleted, 3);
});

test('given a server with an admin token, when a held output is released with a wrong one, then exit 1 and it stays held', async (t) => {
  const running = await startServer(t, ['--admin-token', 'let-me-in-0123456789']);
  assert.equal(
    (await meshctlAt(running.url, ['--admin-token', 'let-me-in-0123456789', 'cluster', 'register', 'east'])).code,
    0,
  );
  running.server.held.hold(
    { cluster: 'east', hash: HASH, reason: 'delete-share', message: 'm', deleted: 3, held: 4, missingClusters: [] },
    new Date(),
  );

  const refused = await meshctlAt(running.url, ['output', 'release', 'east'], {
    MESHRELAY_ADMIN_TOKEN: 'not-the-token-0123456789',
  });
  assert.ok(running.server.held.get('east'), 'a refused release must leave the output held');
  const allowed = await meshctlAt(running.url, ['output', 'release', 'east'], {
    MESHRELAY_ADMIN_TOKEN: 'let-me-in-0123456789',
  });

  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /^meshctl: MESHRELAY_ERR_UNAUTHENTICATED: .*\(POST \/api\/v1\/clusters\/east\/output\/release, HTTP 401\)\n$/,
  );
  assert.equal(allowed.code, 0, allowed.stderr);
});
