// Shared state is shared: an output the blast-radius guard holds for an agent on
// one replica is listed and released through any replica; of two agents with the
// same cluster identity on two replicas, the newer fences the older off; a
// cluster's last contribution kept by the plane outlives Redis and every replica.
// Each holds with the file registry (one shared state directory) and with the
// kubernetes registry (a state directory per replica process, as pods have).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, hasResource, virtualDestinationYaml, type MeshOptions, type OutputOnDisk } from '../mesh.ts';
import { clusterView, faultMesh, restartPlaneWithoutC, safeMode, waitForTranslationAfterWindow } from './support.ts';

interface HeldView {
  held: { cluster: string; hash: string; reason: string; replica: string }[];
}

type Registry = NonNullable<MeshOptions['registry']>;

async function releaseThroughTheOtherReplica(t: TestContext, registry: Registry): Promise<void> {
  const { mesh, s0, s1 } = await faultMesh(t, ['--max-delete-share', '0.1'], registry);
  assert.equal((await clusterView(mesh, 'cluster-b', s1)).connection.connected, true, 'cluster-b is on mgmt-1');
  // cluster-a drops its mesh config: cluster-b's output would lose its reviews.global resources.
  const agentA = mesh.agents.get('cluster-a');
  assert.ok(agentA);
  rmSync(join(agentA.manifestsDir, 'mesh-config.yaml'));
  await waitFor(
    async () => (await mesh.api<HeldView>('/api/v1/outputs/held', s1)).held.some((h) => h.cluster === 'cluster-b'),
    { timeoutMs: 20_000, message: "mgmt-1 did not hold cluster-b's output" },
  );

  // mgmt-0 lists it, naming the replica that holds it...
  const heldOn0 = async () =>
    (await mesh.api<HeldView>('/api/v1/outputs/held', s0)).held.find((h) => h.cluster === 'cluster-b');
  await waitFor(async () => (await heldOn0()) !== undefined, {
    timeoutMs: 10_000,
    message: 'mgmt-0 does not list the output held on mgmt-1',
  });
  const seen = await heldOn0();
  assert.ok(seen);
  assert.equal(seen.replica, 'mgmt-1');
  assert.equal(seen.reason, 'delete-share');
  // ...and releases it: the agent on mgmt-1 receives the output.
  const answer = await mesh.api<{ released: { hash: string } }>('/api/v1/clusters/cluster-b/output/release', s0, {
    method: 'POST',
  });
  assert.equal(answer.released.hash, seen.hash);
  const out = await mesh.waitForOutput(
    'cluster-b',
    (o) => o.hash === seen.hash,
    20_000,
    'the released output on cluster-b',
  );
  assert.equal(hasResource(out, 'VirtualService', 'reviews'), false);
  await waitFor(
    async () =>
      (await Promise.all([s0, s1].map((s) => mesh.api<HeldView>('/api/v1/outputs/held', s)))).every(
        (v) => !v.held.some((h) => h.cluster === 'cluster-b'),
      ),
    { timeoutMs: 10_000, message: 'still listed as held' },
  );
}

async function newerTwinFencesTheOlder(t: TestContext, registry: Registry): Promise<void> {
  const mesh = await Mesh.start(t, { registry });
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
}

/** cluster-c's east-west gateway: its endpoints in every ServiceEntry of reviews.global. */
const C_GATEWAY = /203\.0\.113\.30/;

function reviewsEntry(output: OutputOnDisk): string {
  const entry = output.resources.find((r) => r.kind === 'ServiceEntry' && r.metadata.name.includes('reviews'));
  assert.ok(entry, 'the output holds the ServiceEntry of reviews.global');
  return JSON.stringify(entry);
}

async function contributionOutlivesThePlane(t: TestContext, registry: Registry): Promise<void> {
  const { mesh, s0, s1 } = await faultMesh(t, ['--safe-start-window', '2'], registry);
  const cInput = (await clusterView(mesh, 'cluster-c', s0)).input?.hash;
  assert.ok(cInput);
  const [r0, r1] = await restartPlaneWithoutC(mesh, s0, s1);
  await waitForTranslationAfterWindow(mesh, [r0, r1]);
  // An edit makes both replicas send cluster-a a new output while cluster-c is still away.
  mesh.writeManifest('cluster-a', 'vd-details.yaml', virtualDestinationYaml('details', 'details.global'));
  const out = await mesh.waitForOutput(
    'cluster-a',
    (o) => hasResource(o, 'ServiceEntry', 'details'),
    30_000,
    "cluster-a's edit while cluster-c is away",
  );
  assert.match(reviewsEntry(out), C_GATEWAY, "cluster-c's endpoints stay in cluster-a's ServiceEntry");
  const cEntry = out.provenance.find((p) => p.cluster === 'cluster-c');
  assert.deepEqual([cEntry?.inputHash, cEntry?.stale], [cInput, true]);
  for (const server of [r0, r1]) {
    assert.deepEqual(
      (await safeMode(mesh, server)).staleContributions.map((c) => c.cluster),
      ['cluster-c'],
      `${server.name} carries cluster-c`,
    );
  }
}

for (const registry of ['file', 'kubernetes'] as const) {
  test(`given an output held for an agent on one replica (${registry} registry), when an operator releases it through the other replica, then it reaches the agent`, (t) =>
    releaseThroughTheOtherReplica(t, registry));

  test(`given an agent on replica A (${registry} registry), when a second agent with the same cluster identity connects to replica B, then A fences the older one off`, (t) =>
    newerTwinFencesTheOlder(t, registry));
}

test("given a cluster's contribution kept by the plane (kubernetes registry, a fresh state directory per replica process), when Redis and both replicas restart without it, then both carry it over", (t) =>
  contributionOutlivesThePlane(t, 'kubernetes'));
