/**
 * A root rotation through real servers: started by POST /api/v1/trust/rotate, moved on by ticks
 * only when every registered cluster applied the current generation (a silent one holds it,
 * visibly), 2 → 3 after the old-root leaves expired; the state is shared by replicas and kept
 * across a restart; two replicas starting together make one root.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Client } from '@grpc/grpc-js';
import { waitFor } from '@meshrelay/testkit';
import { mtlsClient, registerCluster, type TestServer } from './harness.ts';
import {
  intermediateCsr,
  meshTrust,
  policyFile,
  rotate,
  startServerOn,
  tempDir,
  trustStatusOf,
} from './mesh-trust-harness.ts';
import type { TrustStatus } from '../src/mesh-trust/trust-status.ts';

const TIMEOUT = { timeout: 180_000 };
const TICK = ['--trust-tick', '100ms'];

async function waitForStatus(server: TestServer, ok: (s: TrustStatus) => boolean, message: string) {
  let last: TrustStatus | undefined;
  await waitFor(
    async () => {
      last = await trustStatusOf(server);
      return ok(last);
    },
    { timeoutMs: 30_000, intervalMs: 100, message },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; last status ${JSON.stringify(last)}`);
  });
  return last as TrustStatus;
}

/** What an agent that applied everything it was told reports (with a CSR when the signer changed). */
async function applyAll(client: Client, cluster: string, oldRootLeafNotAfterMs = 0) {
  const first = await meshTrust(client, { trustDomain: 'cluster.local' });
  const signed = await meshTrust(client, {
    trustDomain: 'cluster.local',
    intermediateCsrPem: (await intermediateCsr(cluster)).csrPem,
  });
  return meshTrust(client, {
    trustDomain: 'cluster.local',
    appliedGeneration: first.generation,
    intermediateRootId: signed.signingRootId,
    intermediateNotAfterUnixMs: Date.now() + 86_400_000,
    oldRootLeafNotAfterUnixMs: oldRootLeafNotAfterMs,
    workloads: [{ spiffeId: 'spiffe://cluster.local/ns/default/sa/web', notAfterUnixMs: Date.now() + 3_600_000 }],
  });
}

async function twoClusters(t: TestContext, server: TestServer) {
  const east = mtlsClient(t, server, await registerCluster(server, 'east'));
  const west = mtlsClient(t, server, await registerCluster(server, 'west'));
  return { east, west };
}

test(
  'given two clusters, when a rotation runs, then each phase waits for every cluster and 2 → 3 for the old leaves',
  TIMEOUT,
  async (t) => {
    const server = await startServerOn(t, tempDir(t, 'meshrelay-rot-'), 'r0', [
      '--root-trust-policy',
      policyFile(t),
      ...TICK,
    ]);
    const { east, west } = await twoClusters(t, server);
    await applyAll(east, 'east');
    await applyAll(west, 'west');
    const oldRoot = (await trustStatusOf(server)).roots[0]?.id;

    const started = await rotate(server);
    assert.equal(started.status, 202);
    const one = (await started.json()) as TrustStatus;
    assert.deepEqual([one.phase, one.generation, one.roots.length], [1, 2, 2]);
    assert.equal((await rotate(server)).status, 409, 'a second rotation waits for the first');

    await applyAll(east, 'east');
    const held = await waitForStatus(server, (s) => s.holds.length === 1, 'west holds phase 1');
    assert.equal(held.phase, 1);
    assert.deepEqual(
      held.holds.map((h) => h.kind === 'cluster' && h.cluster),
      ['west'],
    );
    assert.deepEqual(
      held.clusters.map((c) => [c.cluster, c.phase]),
      [
        ['east', 1],
        ['west', 0],
      ],
    );

    await applyAll(west, 'west');
    const two = await waitForStatus(server, (s) => s.phase === 2, 'phase 2 once west applied phase 1');
    const newRoot = two.signingRootId;
    assert.notEqual(newRoot, oldRoot);
    const leavesUntil = Date.now() + 3000;
    await applyAll(east, 'east', leavesUntil);
    await applyAll(west, 'west');
    await waitForStatus(
      server,
      (s) => s.phase === 2 && s.holds.some((h) => h.kind === 'old-root-leaves'),
      'old-root leaves hold phase 2',
    );
    const three = await waitForStatus(server, (s) => s.phase === 3, 'phase 3 after the old leaves expired');
    assert.ok(Date.now() > leavesUntil);
    assert.deepEqual(three.bundleRootIds, [newRoot]);

    await applyAll(east, 'east');
    await applyAll(west, 'west');
    const steady = await waitForStatus(server, (s) => s.phase === 0, 'steady on the new root');
    assert.deepEqual(
      steady.roots.map((r) => r.id),
      [newRoot],
    );
    assert.equal(steady.generation, 5);
  },
);

test(
  'given a rotation under way, then another replica sees it and a restarted server resumes it',
  TIMEOUT,
  async (t) => {
    const stateDir = tempDir(t, 'meshrelay-rot-');
    const flags = ['--root-trust-policy', policyFile(t), ...TICK];
    const a = await startServerOn(t, stateDir, 'r0', flags);
    // A registered cluster that never reports holds the rotation in phase 1 (with none, it would run through).
    await a.registry.register('silent', {});
    const b = await startServerOn(t, stateDir, 'r1', flags);
    assert.equal((await rotate(a)).status, 202);
    const seen = await waitForStatus(b, (s) => s.phase === 1, 'replica r1 sees the rotation r0 started');
    await a.stop();
    await b.stop();

    const restarted = await startServerOn(t, stateDir, 'r0', flags);
    const resumed = await trustStatusOf(restarted);
    assert.deepEqual(
      [resumed.phase, resumed.generation, resumed.roots.map((r) => r.id)],
      [1, 2, seen.roots.map((r) => r.id)],
    );
    assert.deepEqual(resumed.holds[0], { kind: 'cluster', cluster: 'silent', appliedGeneration: 0, since: seen.since });
  },
);

test('given two replicas starting together with a generated root, then both use one root', TIMEOUT, async (t) => {
  const stateDir = tempDir(t, 'meshrelay-rot-');
  const flags = ['--root-trust-policy', policyFile(t), ...TICK];
  const [a, b] = await Promise.all([startServerOn(t, stateDir, 'r0', flags), startServerOn(t, stateDir, 'r1', flags)]);
  const [sa, sb] = await Promise.all([trustStatusOf(a), trustStatusOf(b)]);
  assert.equal(sa.roots.length, 1);
  assert.deepEqual(sa.roots, sb.roots);
  assert.deepEqual(readdirSync(join(stateDir, 'mesh-ca')), ['root-1']);
  const east = mtlsClient(t, a, await registerCluster(a, 'east'));
  const res = await meshTrust(east, { trustDomain: 'cluster.local' });
  assert.equal(res.signingRootId, sb.signingRootId, 'the replica serving the agent signs with the shared root');
});

test('given a rotation and reports, then /metrics carries the mesh trust expiry gauges', TIMEOUT, async (t) => {
  const server = await startServerOn(t, tempDir(t, 'meshrelay-rot-'), 'r0', [
    '--root-trust-policy',
    policyFile(t),
    ...TICK,
  ]);
  const east = mtlsClient(t, server, await registerCluster(server, 'east'));
  await applyAll(east, 'east');
  await rotate(server);
  const status = await trustStatusOf(server);
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  for (const root of status.roots)
    assert.match(text, new RegExp(`meshrelay_mesh_root_expiry_timestamp_seconds\\{root_id="${root.id}"[^}]*\\} \\d+`));
  assert.match(text, /meshrelay_mesh_trust_phase(\{[^}]*\})? 1\n/);
  assert.match(text, /meshrelay_mesh_intermediate_expiry_timestamp_seconds\{cluster="east"[^}]*\} \d+/);
  assert.match(text, /meshrelay_mesh_workload_cert_expiry_timestamp_seconds\{cluster="east"[^}]*\} \d+/);
});

test(
  'given a silent cluster holding the rotation, when it is deregistered, then the rotation runs on and its record goes',
  TIMEOUT,
  async (t) => {
    const server = await startServerOn(t, tempDir(t, 'meshrelay-rot-'), 'r0', [
      '--root-trust-policy',
      policyFile(t),
      ...TICK,
    ]);
    const gone = mtlsClient(t, server, await registerCluster(server, 'gone'));
    await meshTrust(gone, { trustDomain: 'cluster.local', appliedGeneration: 1 });
    assert.equal((await rotate(server)).status, 202);
    const held = await waitForStatus(server, (s) => s.holds.length > 0, 'the silent cluster holds phase 1');
    assert.deepEqual(
      held.holds.map((h) => h.kind === 'cluster' && h.cluster),
      ['gone'],
    );

    assert.ok(readdirSync(join(server.stateDir, 'mesh-trust')).includes('cluster.gone.json'));
    await server.registry.deregister('gone');
    const steady = await waitForStatus(server, (s) => s.phase === 0, 'the rotation finishes without it');
    assert.equal(steady.roots.length, 1);
    assert.deepEqual(steady.clusters, []);
    await waitFor(() => !readdirSync(join(server.stateDir, 'mesh-trust')).some((f) => f.includes('gone')), {
      timeoutMs: 10_000,
      message: "the deregistered cluster's record is dropped",
    });
  },
);
