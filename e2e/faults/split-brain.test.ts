// DESIGN §13: no rollback after a split brain. With Redis down, an edit reaches
// one replica only; that replica dies; the survivor, whose view is older, must
// never send the agents it inherits an output older than the one they hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { hasResource, virtualDestinationYaml, type OutputOnDisk } from '../mesh.ts';
import { appliedCounts, clusterView, faultMesh, waitForConnected } from './support.ts';

test('given Redis down and an edit accepted by one replica only, when that replica dies, then the survivor waits for inputs as new as the agents hold instead of rolling them back', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t);
  await mesh.redis?.kill();
  for (const server of [s0, s1]) {
    await waitFor(
      async () => !(await mesh.api<{ store: { redisUp: boolean } }>('/api/v1/status', server)).store.redisUp,
      { timeoutMs: 15_000, message: `${server.name} did not notice Redis is down` },
    );
  }
  // cluster-a and cluster-c are on mgmt-0: cluster-a's edit reaches mgmt-0 and both apply it; mgmt-1 never sees it.
  mesh.writeManifest('cluster-a', 'vd-details.yaml', virtualDestinationYaml('details', 'details.global'));
  const newer = await mesh.waitForOutput(
    'cluster-c',
    (o) => hasResource(o, 'ServiceEntry', 'details'),
    30_000,
    'the edit on mgmt-0',
  );
  await mesh.waitForOutput(
    'cluster-a',
    (o) => hasResource(o, 'ServiceEntry', 'details'),
    30_000,
    'the edit on cluster-a',
  );
  const onSurvivor = await mesh.api<OutputOnDisk>('/api/v1/clusters/cluster-c/output', s1);
  assert.equal(hasResource(onSurvivor, 'ServiceEntry', 'details'), false, 'mgmt-1 never saw the edit');

  // cluster-a is kept from re-pushing its input while mgmt-0 dies: cluster-c moves to mgmt-1, whose view is older.
  const agentA = mesh.agents.get('cluster-a');
  assert.ok(agentA);
  agentA.proc.pause();
  t.after(() => agentA.proc.resume());
  await mesh.waitForAppliedLogged('cluster-c');
  const counts = appliedCounts(mesh);
  await s0.proc.kill();
  await waitForConnected(mesh, s1, ['cluster-b', 'cluster-c']);
  // cluster-c's hello told the survivor what it holds (the newer output); the survivor's own is older.
  await waitFor(
    async () => {
      const view = await clusterView(mesh, 'cluster-c', s1);
      return view.connection.pull > 0 && (view.output?.appliedHash ?? null) !== null;
    },
    { timeoutMs: 15_000, message: 'cluster-c did not say hello to mgmt-1' },
  );
  const survivors = await mesh.api<OutputOnDisk>('/api/v1/clusters/cluster-c/output', s1);
  assert.equal(hasResource(survivors, 'ServiceEntry', 'details'), false);

  // cluster-a comes back and re-pushes: the survivor catches up and the edit reaches cluster-b too.
  agentA.proc.resume();
  await waitFor(async () => (await clusterView(mesh, 'cluster-c', s1)).output?.hash === newer.hash, {
    timeoutMs: 30_000,
    message: 'the survivor did not catch up',
  });
  await mesh.waitForOutput(
    'cluster-b',
    (o) => hasResource(o, 'ServiceEntry', 'details'),
    30_000,
    'the edit on cluster-b',
  );
  assert.equal(mesh.appliedCount('cluster-c'), counts.get('cluster-c'), 'cluster-c was never sent an older view');
  assert.equal(mesh.readOutput('cluster-c')?.hash, newer.hash);
});
