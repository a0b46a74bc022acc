// Shared state is shared: an output the blast-radius guard holds for an agent on
// one replica is listed and released through any replica; of two agents with the
// same cluster identity on two replicas, the newer fences the older off.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, hasResource } from '../mesh.ts';
import { clusterView, faultMesh } from './support.ts';

interface HeldView {
  held: { cluster: string; hash: string; reason: string; replica: string }[];
}

test('given an output held for an agent on one replica, when an operator releases it through the other replica, then it reaches the agent', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t, ['--max-delete-share', '0.1']);
  assert.equal((await clusterView(mesh, 'cluster-b', s1)).connection.connected, true, 'cluster-b is on mgmt-1');
  // cluster-a drops its mesh config: cluster-b's output would lose its reviews.global resources.
  const agentA = mesh.agents.get('cluster-a');
  assert.ok(agentA);
  rmSync(join(agentA.manifestsDir, 'mesh-config.yaml'));
  await waitFor(async () => (await mesh.api<HeldView>('/api/v1/outputs/held', s1)).held.some((h) => h.cluster === 'cluster-b'),
    { timeoutMs: 20_000, message: 'mgmt-1 did not hold cluster-b\'s output' });

  // mgmt-0 lists it, naming the replica that holds it...
  const heldOn0 = async () => (await mesh.api<HeldView>('/api/v1/outputs/held', s0)).held.find((h) => h.cluster === 'cluster-b');
  await waitFor(async () => (await heldOn0()) !== undefined, { timeoutMs: 10_000, message: 'mgmt-0 does not list the output held on mgmt-1' });
  const seen = await heldOn0();
  assert.ok(seen);
  assert.equal(seen.replica, 'mgmt-1');
  assert.equal(seen.reason, 'delete-share');
  // ...and releases it: the agent on mgmt-1 receives the output.
  const answer = await mesh.api<{ released: { hash: string } }>('/api/v1/clusters/cluster-b/output/release', s0, { method: 'POST' });
  assert.equal(answer.released.hash, seen.hash);
  const out = await mesh.waitForOutput('cluster-b', (o) => o.hash === seen.hash, 20_000, 'the released output on cluster-b');
  assert.equal(hasResource(out, 'VirtualService', 'reviews'), false);
  await waitFor(async () => (await Promise.all([s0, s1].map((s) => mesh.api<HeldView>('/api/v1/outputs/held', s))))
    .every((v) => !v.held.some((h) => h.cluster === 'cluster-b')), { timeoutMs: 10_000, message: 'still listed as held' });
});

test('given an agent on replica A, when a second agent with the same cluster identity connects to replica B, then A fences the older one off', async (t) => {
  const mesh = await Mesh.start(t);
  const s0 = await mesh.startServer('mgmt-0');
  const s1 = await mesh.startServer('mgmt-1');
  await mesh.register('cluster-a');
  const first = await mesh.startAgent('cluster-a', { from: 'cluster-a', servers: [s0] });
  await mesh.waitForOutput('cluster-a', () => true, 30_000, 'first output of cluster-a');
  const mark = first.proc.lineCount;
  await mesh.startAgent('cluster-a', { name: 'cluster-a-twin', keepDirs: true, servers: [s1] });
  await first.proc.waitForLine(/MESHRELAY_ERR_FENCED/, 15_000, { after: mark });
  const fencedOn = s0.proc.lines.find((l) => l.includes('fenced off this one'));
  assert.ok(fencedOn?.includes('mgmt-1'), 'mgmt-0 names the replica of the newer stream');
});
