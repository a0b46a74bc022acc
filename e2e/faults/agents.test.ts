// DESIGN §7 rows about agents: an agent disconnects; the management plane is
// down for long (also across an agent restart); a frozen agent is noticed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { hasResource, virtualDestinationYaml } from '../mesh.ts';
import { appliedCounts, assertProvenance, clusterView, faultMesh, outputs } from './support.ts';

test('given an agent disconnects, then its last input is kept (stale, with age) and used, and on reconnect a new snapshot replaces it', async (t) => {
  const { mesh, s0 } = await faultMesh(t);
  const before = await clusterView(mesh, 'cluster-c', s0);
  await mesh.agents.get('cluster-c')?.proc.kill();
  await waitFor(async () => (await clusterView(mesh, 'cluster-c', s0)).input?.stale === true, {
    timeoutMs: 10_000,
    message: 'cluster-c not marked stale',
  });
  const stale = await clusterView(mesh, 'cluster-c', s0);
  assert.equal(stale.input?.hash, before.input?.hash, 'the last input is kept');

  // Translation goes on with the kept input: a change in cluster-a reaches
  // cluster-b, and the new output still carries cluster-c's resources and hash.
  mesh.writeManifest('cluster-a', 'vd-extra.yaml', virtualDestinationYaml('extra', 'extra.global'));
  const outB = await mesh.waitForOutput('cluster-b', (o) => hasResource(o, 'ServiceEntry', 'extra'));
  assert.ok(hasResource(outB, 'ServiceEntry', 'ratings'), "cluster-c's VirtualDestination is still translated");
  await assertProvenance(mesh, outB, ['cluster-a', 'cluster-b', 'cluster-c'], s0);

  await mesh.restartAgent('cluster-c');
  await waitFor(
    async () => {
      const v = await clusterView(mesh, 'cluster-c', s0);
      return v.input?.stale === false && v.input.epoch !== before.input?.epoch;
    },
    { timeoutMs: 20_000, message: "cluster-c's new snapshot did not replace the kept one" },
  );
  const after = await clusterView(mesh, 'cluster-c', s0);
  assert.equal(after.input?.hash, before.input?.hash, 'same manifests, same hash');
});

test('given the management plane is down for long, then agents keep their last output, also across an agent restart', async (t) => {
  const { mesh } = await faultMesh(t);
  const held = outputs(mesh);
  for (const s of mesh.servers) await s.proc.stop(5000);
  await mesh.redis?.stop();
  // An agent restarted while every server is down restores and keeps serving its last output.
  const agent = await mesh.restartAgent('cluster-b');
  await agent.proc.waitForLine(/restored last applied output/, 15_000);
  await agent.proc.waitForLine(/relay connection ended|connect/i, 15_000);
  for (const [cluster, output] of held) {
    const kept = mesh.readOutput(cluster);
    assert.equal(kept?.hash, output?.hash, `${cluster} keeps its output`);
    // Still the output built from all three clusters' inputs before the outage.
    assert.deepEqual(kept?.provenance, output?.provenance);
    assert.deepEqual(
      kept?.provenance.map((p) => p.cluster),
      ['cluster-a', 'cluster-b', 'cluster-c'],
    );
  }
  assert.ok(agent.proc.running, 'the agent keeps running without a management plane');
});

test('given a frozen agent process, then the server notices within the heartbeat timeout and marks its input stale; it comes back when thawed', async (t) => {
  const { mesh, s1 } = await faultMesh(t);
  const counts = appliedCounts(mesh);
  const agent = mesh.agents.get('cluster-b');
  assert.ok(agent);
  agent.proc.pause();
  await waitFor(
    async () => {
      const v = await clusterView(mesh, 'cluster-b', s1);
      return !v.connection.connected && v.input?.stale === true;
    },
    { timeoutMs: 10_000, intervalMs: 200, message: 'the frozen agent was not dropped' },
  );
  agent.proc.resume();
  // Back on either replica (it rotates to the next address after a failure).
  await waitFor(
    async () =>
      (await Promise.all(mesh.servers.map((s) => clusterView(mesh, 'cluster-b', s)))).some(
        (v) => v.connection.connected,
      ),
    {
      timeoutMs: 20_000,
      message: 'the agent did not come back',
    },
  );
  assert.deepEqual(appliedCounts(mesh), counts, 'no output was re-applied');
  await assertProvenance(mesh, mesh.readOutput('cluster-b'), ['cluster-a', 'cluster-b', 'cluster-c'], s1);
});
