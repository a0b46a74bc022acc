// DESIGN §7 rows about management replicas: a replica dies; scale up and down;
// a replica drains on SIGTERM (go-away); a frozen replica is left by its agents.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import {
  appliedCounts,
  assertProvenance,
  CLUSTERS,
  clusterView,
  faultMesh,
  outputs,
  waitForConnected,
} from './support.ts';

test('given a replica dies, then its agents reconnect to the other, which serves byte-identical outputs, so nothing is re-applied', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t);
  const before = outputs(mesh);
  const counts = appliedCounts(mesh);
  await s0.proc.kill();
  await waitForConnected(mesh, s1, CLUSTERS);
  // Give the survivor a translation round on the reconnected agents' snapshots.
  for (const c of CLUSTERS) {
    await waitFor(async () => (await clusterView(mesh, c, s1)).output?.hash === before.get(c)?.hash, {
      timeoutMs: 15_000,
      message: `survivor's output for ${c} differs`,
    });
  }
  assert.deepEqual(appliedCounts(mesh), counts, 'agents applied nothing new');
  for (const c of CLUSTERS) {
    assert.equal(mesh.readOutput(c)?.hash, before.get(c)?.hash);
    await assertProvenance(mesh, mesh.readOutput(c), CLUSTERS, s1);
  }
});

test('given a new replica, established connections stay; when a replica drains (SIGTERM), it sends go-away first and its agents move to survivors', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t);
  const counts = appliedCounts(mesh);
  const s2 = await mesh.startServer('mgmt-2');
  // Scale up: nobody moves to the new replica.
  for (const c of CLUSTERS) {
    const views = await Promise.all([s0, s1].map((s) => clusterView(mesh, c, s)));
    assert.ok(
      views.some((v) => v.connection.connected),
      `${c} stays connected where it was`,
    );
    assert.equal((await clusterView(mesh, c, s2)).connection.connected, false);
  }
  // Scale down / drain: SIGTERM mgmt-1; cluster-b (which prefers mgmt-1) is told to go.
  const agentB = mesh.agents.get('cluster-b');
  assert.ok(agentB);
  const mark = agentB.proc.lineCount;
  await s1.proc.stop(10_000);
  await agentB.proc.waitForLine(/go-away/, 10_000, { after: mark });
  await waitForConnected(mesh, s0, CLUSTERS);
  assert.deepEqual(appliedCounts(mesh), counts, 'moving re-applied nothing');
  for (const c of CLUSTERS) await assertProvenance(mesh, mesh.readOutput(c), CLUSTERS, s0);
});

test('given a frozen replica, then its agents leave it within the heartbeat timeout for the other replica', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t);
  const counts = appliedCounts(mesh);
  s0.proc.pause();
  await waitForConnected(mesh, s1, CLUSTERS, 20_000);
  s0.proc.resume();
  assert.deepEqual(appliedCounts(mesh), counts);
});
