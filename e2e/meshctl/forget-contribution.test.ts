import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildNode, buildTestInputSnapshot } from '@meshrelay/testkit';
import { meshctlAt, startServer } from './harness.ts';

test('given no kept contribution, when meshctl forgets it, then exit 1 with one line', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['cluster', 'forget-contribution', 'east']);

  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.equal(
    result.stderr,
    'meshctl: MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: no contribution of cluster "east" is kept (POST /api/v1/clusters/east/contribution/release, HTTP 404)\n',
  );
});

test('given a kept contribution of an absent cluster, when meshctl forgets it, then it is released and no longer carried', async (t) => {
  const running = await startServer(t);
  assert.equal((await meshctlAt(running.url, ['cluster', 'register', 'east'])).code, 0);
  const input = buildTestInputSnapshot('east', [buildNode({ name: 'node-e1' })]);
  await running.server.contributions.remember([input]);

  const result = await meshctlAt(running.url, ['cluster', 'forget-contribution', 'east', '-o', 'json']);

  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { released: { cluster: 'east', inputHash: input.hash } });
  assert.equal(running.server.contributions.isReleased('east'), true);
  assert.equal((await running.server.contributions.carry(['east'], new Date())).size, 0);
});
