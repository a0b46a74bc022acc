// DESIGN §13: the guard protects content. After Redis and every replica restart
// with a warm cluster kept away past the safe-start window, outputs keep what
// that cluster contributed (its endpoints inside other clusters' ServiceEntries,
// its own VirtualDestination), marked stale, while everyone else's changes ship.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import { hasResource, virtualDestinationYaml, type Mesh, type OutputOnDisk, type ServerProc } from '../mesh.ts';
import { clusterView, faultMesh, restartPlaneWithoutC, waitForTranslationAfterWindow } from './support.ts';

/** cluster-c's east-west gateway: its endpoints in every ServiceEntry of reviews.global. */
const C_GATEWAY = '203.0.113.30';

function reviewsEntry(output: OutputOnDisk | undefined): string {
  const entry = output?.resources.find((r) => r.kind === 'ServiceEntry' && r.metadata.name.includes('reviews'));
  assert.ok(entry, 'cluster-a holds the ServiceEntry of reviews.global');
  return JSON.stringify(entry);
}

interface StaleView {
  staleContributions: { cluster: string; inputHash: string }[];
}

async function staleEverywhere(mesh: Mesh, servers: readonly ServerProc[]): Promise<string[][]> {
  return Promise.all(
    servers.map(async (s) =>
      (await mesh.api<StaleView>('/api/v1/safe-mode', s)).staleContributions.map((c) => c.cluster),
    ),
  );
}

test('given a warm cluster kept away past the safe-start window after a full restart, when translation resumes, then its contribution is carried over as stale until an operator releases it', async (t) => {
  const { mesh, s0, s1 } = await faultMesh(t, ['--safe-start-window', '3']);
  const cInput = (await clusterView(mesh, 'cluster-c', s0)).input?.hash;
  assert.ok(cInput);
  assert.match(reviewsEntry(mesh.readOutput('cluster-a')), new RegExp(C_GATEWAY.replaceAll('.', '\\.')));

  const [r0, r1] = await restartPlaneWithoutC(mesh, s0, s1);
  await waitForTranslationAfterWindow(mesh, [r0, r1]);

  // Translation for everyone else goes on: cluster-a's new VirtualDestination ships...
  mesh.writeManifest('cluster-a', 'vd-details.yaml', virtualDestinationYaml('details', 'details.global'));
  const out = await mesh.waitForOutput(
    'cluster-a',
    (o) => hasResource(o, 'ServiceEntry', 'details'),
    30_000,
    "cluster-a's edit while cluster-c is away",
  );
  // ...and keeps what cluster-c contributed: its endpoints and its own VirtualDestination.
  assert.match(
    reviewsEntry(out),
    new RegExp(C_GATEWAY.replaceAll('.', '\\.')),
    "cluster-c's endpoints stay in cluster-a's ServiceEntry",
  );
  assert.ok(hasResource(out, 'ServiceEntry', 'ratings'), "cluster-c's VirtualDestination stays");
  // Provenance says the contribution is stale and names the input it came from.
  const cEntry = out.provenance.find((p) => p.cluster === 'cluster-c');
  assert.deepEqual([cEntry?.inputHash, cEntry?.stale], [cInput, true]);
  assert.ok(out.provenance.filter((p) => p.cluster !== 'cluster-c').every((p) => !('stale' in p)));

  // Status and metrics name the stale contribution on every replica.
  assert.deepEqual(await staleEverywhere(mesh, [r0, r1]), [['cluster-c'], ['cluster-c']]);
  for (const server of [r0, r1]) {
    assert.match(await mesh.metrics(server), /meshrelay_stale_contribution\{cluster="cluster-c",pod="mgmt-[01]"\} 1/);
  }

  // The web UI shows a note naming the stale cluster.
  const page = await openBrowserPage(t, `${r0.api}/?poll=250`);
  await page.locator('#admin-token').fill(mesh.adminToken());
  await page.getByRole('button', { name: 'Sign in' }).click();
  const note = page.locator('#stale-contributions-banner');
  await note.locator('[data-cluster="cluster-c"]').waitFor({ state: 'visible' });
  await saveScreenshot(page, 'e2e', 'stale-contribution');

  // The operator lets it go through one replica: both build outputs without it, and it is not held.
  await mesh.api('/api/v1/clusters/cluster-c/contribution/release', r1, { method: 'POST' });
  const without = await mesh.waitForOutput(
    'cluster-a',
    (o) => !hasResource(o, 'ServiceEntry', 'ratings'),
    20_000,
    'outputs without cluster-c after the release',
  );
  assert.doesNotMatch(reviewsEntry(without), new RegExp(C_GATEWAY.replaceAll('.', '\\.')));
  assert.deepEqual(
    without.provenance.map((p) => p.cluster),
    ['cluster-a', 'cluster-b'],
  );
  await waitFor(async () => (await staleEverywhere(mesh, [r0, r1])).every((s) => s.length === 0), {
    timeoutMs: 10_000,
    message: 'stale contribution still reported',
  });
  await note.waitFor({ state: 'hidden' });

  // The cluster returns: its fresh contribution is back, not stale.
  await mesh.restartAgent('cluster-c', [r0, r1]);
  await mesh.waitForOutput('cluster-a', (o) => hasResource(o, 'ServiceEntry', 'ratings'), 20_000, 'cluster-c back');
  const fresh = async (server: ServerProc) => {
    const output = await mesh.api<{ provenance: { cluster: string; stale?: boolean }[] }>(
      '/api/v1/clusters/cluster-a/output',
      server,
    );
    return output.provenance.length === 3 && output.provenance.every((p) => p.stale !== true);
  };
  await waitFor(async () => (await fresh(r0)) && (await fresh(r1)), {
    timeoutMs: 20_000,
    message: "outputs were not rebuilt from cluster-c's fresh input",
  });
  assert.deepEqual(await staleEverywhere(mesh, [r0, r1]), [[], []]);
});
