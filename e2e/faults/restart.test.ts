// DESIGN §6 and §7: Redis and every management replica restart together.
// The safe-mode gate must hold translation while a warm cluster is missing, so
// no output is ever built from a partial view; operators see why (metrics
// through a real Prometheus, the API the UI and meshctl read) and release it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import type { OutputOnDisk } from '../mesh.ts';
import { Prometheus } from '../prometheus.ts';
import {
  CLUSTERS,
  appliedCounts,
  assertProvenance,
  clusterView,
  faultMesh,
  outputs,
  restartPlaneWithoutC,
  safeMode,
  waitForConnectedAnywhere,
} from './support.ts';

interface HeldOutputsView {
  held: { cluster: string; reason: string; missingClusters: string[] }[];
}

test('given safe mode, when Redis and all replicas restart with one agent kept away, then translation is held for that cluster only until skipWarming releases it', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t, ['--safe-mode', 'true']);
  const before = outputs(mesh);
  const counts = appliedCounts(mesh);
  const [r0, r1] = await restartPlaneWithoutC(mesh, s0, s1);
  await waitForConnectedAnywhere(mesh, ['cluster-a', 'cluster-b']);

  for (const server of [r0, r1]) {
    // Both replicas see a and b (pushed to one of them, shared through Redis) and wait for c.
    await waitFor(async () => (await safeMode(mesh, server)).missing.length === 1, {
      timeoutMs: 10_000,
      message: `${server.name} did not see a and b`,
    });
    const sm = await safeMode(mesh, server);
    assert.equal(sm.active, true);
    assert.equal(sm.mode, 'safe-mode');
    assert.deepEqual(sm.missing, ['cluster-c']);
    // Held means nothing was computed: the fresh replicas have no output at all.
    assert.equal((await clusterView(mesh, 'cluster-a', server)).output, null);
  }

  const prom = await Prometheus.start(
    t,
    [r0, r1].map((s) => `127.0.0.1:${s.metricsPort}`),
  );
  const active = await prom.waitForQuery(
    'count by(cluster) (sum by(cluster) (gloo_mesh_safe_mode_active != 0)) > 0',
    (r) => r.length === 1,
  );
  assert.equal(active[0]?.metric['cluster'], 'cluster-c');
  const withClients = await prom.waitForQuery(
    'count by(cluster) ((relay_pull_clients_connected != 0) * on(pod) group_left() (max(gloo_mesh_safe_mode_active) by (pod) >= 1)) > 0',
    (r) => r.length === 2,
  );
  assert.deepEqual(withClients.map((s) => s.metric['cluster']).sort(), ['cluster-a', 'cluster-b']);

  // The web UI's banner names the missing cluster, and only it.
  const page = await openBrowserPage(t, `${r0.api}/?poll=250`);
  await page.locator('#admin-token').fill(mesh.adminToken());
  await page.getByRole('button', { name: 'Sign in' }).click();
  const banner = page.locator('#safe-mode-banner');
  await banner.locator('[data-cluster="cluster-c"]').first().waitFor({ state: 'visible' });
  assert.equal(await banner.locator('[data-cluster="cluster-a"]').count(), 0);
  await saveScreenshot(page, 'e2e', 'safe-mode-held');

  // The other agents keep their last outputs untouched.
  assert.deepEqual(appliedCounts(mesh), counts);
  for (const c of ['cluster-a', 'cluster-b']) assert.equal(mesh.readOutput(c)?.hash, before.get(c)?.hash);

  // Release without a restart: skipWarming on the missing cluster.
  await mesh.patchCluster('cluster-c', { skipWarming: true }, r0);
  for (const server of [r0, r1]) {
    await waitFor(async () => !(await safeMode(mesh, server)).active, {
      timeoutMs: 10_000,
      message: `${server.name} stayed in safe mode`,
    });
  }
  await prom.waitForQuery('sum(gloo_mesh_safe_mode_active)', (r) => r.length === 1 && r[0]?.value[1] === '0');
  await banner.waitFor({ state: 'hidden' });
  await saveScreenshot(page, 'e2e', 'safe-mode-released');
  // Translation now runs on what is admitted (a and b) plus cluster-c's last
  // known contribution, carried over and marked stale (DESIGN §13): the outputs
  // equal what the agents hold, so nothing is deleted, held or re-applied.
  await waitFor(async () => (await clusterView(mesh, 'cluster-a', r0)).output !== null, {
    timeoutMs: 10_000,
    message: 'no translation after release',
  });
  const translated = await mesh.api<{ translation: { admitted: { cluster: string }[] } }>('/api/v1/status', r0);
  assert.deepEqual(
    translated.translation.admitted.map((a) => a.cluster).sort(),
    ['cluster-a', 'cluster-b'],
    'the gate admitted a and b only',
  );
  const out = await mesh.api<{ hash: string; provenance: { cluster: string; inputHash: string; stale?: boolean }[] }>(
    '/api/v1/clusters/cluster-a/output',
    r0,
  );
  assert.deepEqual(
    out.provenance.filter((p) => p.stale === true).map((p) => p.cluster),
    ['cluster-c'],
  );
  assert.equal(out.hash, before.get('cluster-a')?.hash, 'the carried contribution keeps the output as it was');
  assert.deepEqual((await mesh.api<HeldOutputsView>('/api/v1/outputs/held', r0)).held, []);
  assert.deepEqual(appliedCounts(mesh), counts, 'no deletion reached an agent');

  // The missing agent returns: the full view is back, outputs equal what agents hold, nothing is re-applied.
  await mesh.restartAgent('cluster-c', [r0, r1]);
  await waitFor(async () => (await safeMode(mesh, r0)).staleContributions.length === 0, {
    timeoutMs: 20_000,
    message: "cluster-c's contribution stayed stale after it returned",
  });
  for (const c of ['cluster-a', 'cluster-b', 'cluster-c']) {
    await assertProvenance(mesh, mesh.readOutput(c), ['cluster-a', 'cluster-b', 'cluster-c'], r0);
  }
  assert.deepEqual(
    new Map([...appliedCounts(mesh)].filter(([c]) => c !== 'cluster-c')),
    new Map([...counts].filter(([c]) => c !== 'cluster-c')),
  );
});

test('given a safe-start window, when the plane restarts with one agent away, then translation waits for the window and then runs with its last contribution carried over as stale', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t, ['--safe-start-window', '12']);
  const before = outputs(mesh);
  const counts = appliedCounts(mesh);
  // Restarted replicas get the window flag after the default 0 in the harness.
  const [r0, r1] = await restartPlaneWithoutC(mesh, s0, s1);
  await waitFor(async () => (await safeMode(mesh, r0)).missing.length === 1, {
    timeoutMs: 12_000,
    intervalMs: 100,
    message: 'mgmt-0 did not see a and b',
  });
  const sm = await safeMode(mesh, r0);
  assert.equal(sm.active, true);
  assert.equal(sm.mode, 'safe-start-window');
  assert.deepEqual(sm.missing, ['cluster-c']);
  assert.ok(sm.windowEndsAt !== null);
  await waitFor(async () => !(await safeMode(mesh, r0)).active, {
    timeoutMs: 25_000,
    message: 'window did not elapse',
  });
  // Each replica built its outputs from what the gate admitted (a and b) plus
  // cluster-c's carried contribution, which provenance marks stale.
  for (const server of [r0, r1]) {
    await waitFor(async () => (await clusterView(mesh, 'cluster-a', server)).output !== null, {
      timeoutMs: 15_000,
      message: `${server.name} did not translate`,
    });
    const out = await mesh.api<OutputOnDisk>('/api/v1/clusters/cluster-a/output', server);
    assert.deepEqual(
      out.provenance.map((p) => [p.cluster, p.stale === true]),
      [
        ['cluster-a', false],
        ['cluster-b', false],
        ['cluster-c', true],
      ],
    );
    await assertProvenance(mesh, out, CLUSTERS, server);
    assert.match(await mesh.metrics(server), /meshrelay_stale_contribution\{cluster="cluster-c",pod="mgmt-[01]"\} 1/);
  }
  // Nothing to hold: no output deletes anything, and the agents applied nothing new.
  for (const server of [r0, r1])
    assert.deepEqual((await mesh.api<HeldOutputsView>('/api/v1/outputs/held', server)).held, []);
  assert.deepEqual(appliedCounts(mesh), counts, 'agents kept their outputs');
  for (const c of CLUSTERS)
    assert.equal(mesh.readOutput(c)?.hash, before.get(c)?.hash, `${c} holds the output it had before the restart`);
});

/** relay_snapshot_bytes_total of pushes of one kind, summed over every running replica, per cluster. */
async function pushedBytes(
  mesh: Awaited<ReturnType<typeof faultMesh>>['mesh'],
  kind: 'full' | 'delta',
): Promise<Map<string, number>> {
  const sums = new Map<string, number>(CLUSTERS.map((c) => [c, 0]));
  for (const server of mesh.servers.filter((s) => s.proc.running)) {
    for (const line of (await mesh.metrics(server)).split('\n')) {
      const m = /^relay_snapshot_bytes_total\{(.*)\} (\S+)$/.exec(line);
      const cluster = m && /cluster="([^"]+)"/.exec(m[1] as string)?.[1];
      if (
        !m ||
        !cluster ||
        !(m[1] as string).includes('direction="push"') ||
        !(m[1] as string).includes(`kind="${kind}"`)
      )
        continue;
      sums.set(cluster, (sums.get(cluster) ?? 0) + Number(m[2]));
    }
  }
  return sums;
}

test('given Redis kept, when every replica is killed and restarted (a reconnect storm), then each agent resumes its input by hash: no input travels again and no agent re-applies', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t);
  const before = outputs(mesh);
  const counts = appliedCounts(mesh);
  await Promise.all([s0.proc.kill(), s1.proc.kill()]);
  const [r0, r1] = [await mesh.restartServer(s0), await mesh.restartServer(s1)];
  await waitFor(async () => [...(await pushedBytes(mesh, 'delta')).values()].every((n) => n > 0), {
    timeoutMs: 20_000,
    message: 'not every agent resumed on the restarted replicas',
  });
  await waitForConnectedAnywhere(mesh, CLUSTERS);
  assert.deepEqual([...(await pushedBytes(mesh, 'full')).values()], [0, 0, 0], 'no input snapshot was pushed full');
  for (const server of [r0, r1]) {
    await waitFor(async () => (await clusterView(mesh, 'cluster-a', server)).output !== null, {
      timeoutMs: 15_000,
      message: `${server.name} did not translate`,
    });
  }
  for (const c of CLUSTERS) assert.equal(mesh.readOutput(c)?.hash, before.get(c)?.hash);
  assert.deepEqual(appliedCounts(mesh), counts, 'no agent re-applied its output');
});
