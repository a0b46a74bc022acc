// DESIGN §6 and §7: Redis and every management replica restart together.
// The safe-mode gate must hold translation while a warm cluster is missing, so
// no output is ever built from a partial view; operators see why (metrics
// through a real Prometheus, the API the UI and meshctl read) and release it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import type { Mesh, ServerProc } from '../mesh.ts';
import { Prometheus } from '../prometheus.ts';
import { appliedCounts, assertProvenance, clusterView, faultMesh, outputs, safeMode, waitForConnectedAnywhere } from './support.ts';

/** Kills cluster-c's agent, Redis and both replicas; brings Redis and the replicas back (empty). */
async function restartPlaneWithoutC(mesh: Mesh, s0: ServerProc, s1: ServerProc): Promise<[ServerProc, ServerProc]> {
  await mesh.agents.get('cluster-c')?.proc.kill();
  await Promise.all([s0.proc.kill(), s1.proc.kill()]);
  await mesh.redis?.kill();
  await mesh.redis?.restart();
  return [await mesh.restartServer(s0), await mesh.restartServer(s1)];
}

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
    await waitFor(async () => (await safeMode(mesh, server)).missing.length === 1, { timeoutMs: 10_000, message: `${server.name} did not see a and b` });
    const sm = await safeMode(mesh, server);
    assert.equal(sm.active, true);
    assert.equal(sm.mode, 'safe-mode');
    assert.deepEqual(sm.missing, ['cluster-c']);
    // Held means nothing was computed: the fresh replicas have no output at all.
    assert.equal((await clusterView(mesh, 'cluster-a', server)).output, null);
  }

  const prom = await Prometheus.start(t, [r0, r1].map((s) => `127.0.0.1:${s.metricsPort}`));
  const active = await prom.waitForQuery('count by(cluster) (sum by(cluster) (gloo_mesh_safe_mode_active != 0)) > 0', (r) => r.length === 1);
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
    await waitFor(async () => !(await safeMode(mesh, server)).active, { timeoutMs: 10_000, message: `${server.name} stayed in safe mode` });
  }
  await prom.waitForQuery('sum(gloo_mesh_safe_mode_active)', (r) => r.length === 1 && r[0]?.value[1] === '0');
  await banner.waitFor({ state: 'hidden' });
  await saveScreenshot(page, 'e2e', 'safe-mode-released');
  // Translation now runs on what is admitted (a and b) — and its outputs would
  // delete cluster-c's resources without positive evidence, so the guard holds them.
  await waitFor(async () => (await clusterView(mesh, 'cluster-a', r0)).output !== null, { timeoutMs: 10_000, message: 'no translation after release' });
  const held = await mesh.api<HeldOutputsView>('/api/v1/outputs/held', r0);
  assert.ok(held.held.some((h) => h.reason === 'missing-inputs' && h.missingClusters.includes('cluster-c')));
  assert.deepEqual(appliedCounts(mesh), counts, 'no deletion reached an agent');

  // The missing agent returns: the full view is back, outputs equal what agents hold, nothing is re-applied.
  await mesh.restartAgent('cluster-c', [r0, r1]);
  await waitFor(async () => (await mesh.api<HeldOutputsView>('/api/v1/outputs/held', r0)).held.length === 0, { timeoutMs: 20_000, message: 'held outputs were not cleared when cluster-c returned' });
  for (const c of ['cluster-a', 'cluster-b', 'cluster-c']) {
    await assertProvenance(mesh, mesh.readOutput(c), ['cluster-a', 'cluster-b', 'cluster-c'], r0);
  }
  assert.deepEqual(
    new Map([...appliedCounts(mesh)].filter(([c]) => c !== 'cluster-c')),
    new Map([...counts].filter(([c]) => c !== 'cluster-c')),
  );
});

test('given a safe-start window, when the plane restarts with one agent away, then translation waits for the window and then runs without it, with the guard reporting the deletion', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t, ['--safe-start-window', '5']);
  const counts = appliedCounts(mesh);
  // Restarted replicas get the window flag after the default 0 in the harness.
  const [r0, r1] = await restartPlaneWithoutC(mesh, s0, s1);
  await waitFor(async () => (await safeMode(mesh, r0)).missing.length === 1, { timeoutMs: 5000, intervalMs: 100, message: 'mgmt-0 did not see a and b' });
  const sm = await safeMode(mesh, r0);
  assert.equal(sm.active, true);
  assert.equal(sm.mode, 'safe-start-window');
  assert.deepEqual(sm.missing, ['cluster-c']);
  assert.ok(sm.windowEndsAt !== null);
  await waitFor(async () => !(await safeMode(mesh, r0)).active, { timeoutMs: 15_000, message: 'window did not elapse' });
  // The guard runs where each agent is connected: gather both replicas' reports.
  const heldEverywhere = async () =>
    (await Promise.all([r0, r1].map((s) => mesh.api<HeldOutputsView>('/api/v1/outputs/held', s)))).flatMap((v) => v.held);
  await waitFor(async () => (await heldEverywhere()).length >= 2, { timeoutMs: 15_000, message: 'the guard did not report both outputs' });
  const held = await heldEverywhere();
  assert.deepEqual(held.map((h) => h.cluster).sort(), ['cluster-a', 'cluster-b']);
  assert.ok(held.every((h) => h.reason === 'missing-inputs' && h.missingClusters.includes('cluster-c')));
  const metrics = (await Promise.all([r0, r1].map((s) => mesh.metrics(s)))).join('\n');
  assert.match(metrics, /meshrelay_held_outputs\{cluster="cluster-a",pod="mgmt-[01]"\} 1/);
  // The output each replica built was admitted by the gate: a and b only.
  for (const server of [r0, r1]) {
    const out = await mesh.api<{ provenance: { cluster: string }[] }>('/api/v1/clusters/cluster-a/output', server);
    assert.deepEqual(out.provenance.map((p) => p.cluster), ['cluster-a', 'cluster-b']);
  }
  assert.deepEqual(appliedCounts(mesh), counts, 'agents kept their outputs');
});
