// The web UI's Topology view in headless Chromium, against real processes:
// redis-server, a management server and three relay agents (file provider).
// Three clusters back and consume VirtualDestinations; then one is carried
// over after a plane restart, one disconnects and one has its output held by
// the blast-radius guard — and the drawing says so for each.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Resource } from '@meshrelay/api';
import {
  ARTIFACTS_ROOT,
  buildEastWestGateway,
  buildEndpointSlice,
  buildNode,
  buildService,
  buildVirtualDestination,
  openBrowserPage,
  saveScreenshot,
  waitFor,
} from '@meshrelay/testkit';
import { Mesh } from './mesh.ts';

const CLUSTERS = ['cluster-a', 'cluster-b', 'cluster-c'] as const;
const UI_TIMEOUT_MS = 20_000;

/** Which Services each cluster runs, and which VirtualDestinations it defines. */
const PLAN: Readonly<
  Record<(typeof CLUSTERS)[number], { octet: number; services: readonly string[]; defines: readonly string[] }>
> = {
  'cluster-a': { octet: 1, services: ['reviews', 'productpage'], defines: ['reviews', 'productpage'] },
  'cluster-b': { octet: 2, services: ['reviews', 'ratings'], defines: ['ratings'] },
  'cluster-c': { octet: 3, services: ['reviews', 'ratings', 'checkout'], defines: ['checkout'] },
};

const destinationId = (name: string, cluster: string) => `VirtualDestination/bookinfo/${name}-global@${cluster}`;

/**
 * A cluster's manifests: nodes, its east-west gateway, each Service with one ready endpoint, one file per
 * VirtualDestination.
 */
function writeManifests(dir: string, cluster: (typeof CLUSTERS)[number]): string {
  const { octet, services, defines } = PLAN[cluster];
  const target = join(dir, `topology-${cluster}`);
  mkdirSync(target, { recursive: true });
  // JSON documents are YAML documents: the file provider reads them as they are.
  const write = (file: string, resources: Resource[]) =>
    writeFileSync(join(target, file), resources.map((r) => JSON.stringify(r)).join('\n---\n'));
  write('infra.yaml', [
    buildNode({ name: `node-${octet}`, region: 'region-1', zone: `zone-${octet}` }),
    buildEastWestGateway({ address: `203.0.113.${octet * 10}` }),
  ]);
  write(
    'services.yaml',
    services.flatMap((name, i) => [
      buildService({
        name,
        namespace: 'bookinfo',
        ports: [{ name: 'http', port: 9080 }],
        selector: { app: name },
        labels: { app: name },
      }),
      buildEndpointSlice({
        service: name,
        namespace: 'bookinfo',
        ports: [{ name: 'http', port: 9080 }],
        endpoints: [{ ip: `10.${octet}.${i}.10`, node: `node-${octet}` }],
      }),
    ]),
  );
  for (const name of defines) {
    write(`vd-${name}.yaml`, [
      buildVirtualDestination({
        name: `${name}-global`,
        namespace: 'bookinfo',
        hosts: [`${name}.global`],
        services: [{ labels: { app: name } }],
        ports: [{ number: 9080, protocol: 'HTTP' }],
      }),
    ]);
  }
  return target;
}

/**
 * The states of the drawn edges, as `role from → to: state`, sorted; read in one go, so never half of one poll's
 * drawing and half of the next.
 */
async function drawnEdges(page: Page): Promise<string[]> {
  const edges = await page
    .locator('#topology g.topo-edge')
    .evaluateAll((els) =>
      els.map(
        (e) =>
          `${e.getAttribute('data-role')} ${e.getAttribute('data-from')} → ${e.getAttribute('data-to')}: ${e.getAttribute('data-state')}`,
      ),
    );
  return edges.sort();
}

async function waitForEdges(page: Page, check: (edges: string[]) => boolean, message: string): Promise<string[]> {
  let last: string[] = [];
  try {
    await waitFor(async () => check((last = await drawnEdges(page))), {
      timeoutMs: UI_TIMEOUT_MS,
      intervalMs: 200,
      message,
    });
  } catch (err) {
    throw new Error(`${message}; drawn: ${last.join('; ')}`, { cause: err });
  }
  return last;
}

test('given three clusters with real agents, then the topology draws who backs and who receives each VirtualDestination, and marks carried, stale and held ones', async (t) => {
  const mesh = await Mesh.start(t, { serverFlags: ['--max-delete-share', '0.1'] });
  const server = await mesh.startServer('mgmt-0');
  for (const c of CLUSTERS) {
    await mesh.register(c);
    await mesh.startAgent(c, { from: writeManifests(mesh.dir, c) });
  }
  for (const c of CLUSTERS)
    await mesh.waitForOutput(c, (o) => o.provenance.length === 3, 30_000, `first full output of ${c}`);

  const page = await openBrowserPage(t, `${server.api}/?poll=250`, UI_TIMEOUT_MS);
  await page.locator('#admin-token').fill(mesh.adminToken());
  await page.getByRole('button', { name: 'Sign in' }).click();

  // Every exporter backs what it runs; every cluster receives every destination (the implicit global workspace).
  const healthy = await waitForEdges(page, (e) => e.length === 7 + 12, 'the full topology was not drawn');
  assert.ok(healthy.every((e) => e.endsWith(': current')));
  for (const [name, exporters] of [
    ['reviews', CLUSTERS],
    ['ratings', ['cluster-b', 'cluster-c']],
    ['checkout', ['cluster-c']],
    ['productpage', ['cluster-a']],
  ] as const) {
    const id = destinationId(name, Object.entries(PLAN).find(([, p]) => p.defines.includes(name))?.[0] ?? '');
    assert.deepEqual(
      healthy.filter((e) => e.startsWith('export') && e.includes(`→ ${id}:`)).map((e) => e.split(' ')[1]),
      [...exporters],
      `exporters of ${name}`,
    );
    assert.match(
      (await page.locator(`#topology g[data-destination="${id}"]`).textContent()) ?? '',
      new RegExp(`${name}\\.global`),
    );
  }
  assert.equal(await page.locator('#topology g[data-side="export"][data-state="ok"]').count(), 3);
  assert.match(await page.locator('#topology-attention').innerText(), /Every contribution is current/);
  assert.match(
    await page.locator('#topology-plane').innerText(),
    /Replica mgmt-0: translating 3 clusters, 4 VirtualDestinations\./,
  );
  await saveScreenshot(page, 'ui', 'topology-current');

  // Redis and the server restart while cluster-c's agent is gone: its last known contribution is carried.
  await mesh.agents.get('cluster-c')?.proc.kill();
  await server.proc.kill();
  await mesh.redis?.kill();
  await mesh.redis?.restart();
  await mesh.restartServer(server);
  // Right after the restart no output exists yet: wait for all seven export edges, cluster-c's carried, the others
  // back.
  await waitForEdges(
    page,
    (e) => {
      const exports = e.filter((x) => x.startsWith('export'));
      return (
        exports.length === 7 &&
        exports.every((x) => x.endsWith(x.startsWith('export cluster-c') ? ': carried' : ': current'))
      );
    },
    'cluster-a and cluster-b did not return while cluster-c was drawn as carried',
  );
  await page.locator('#topology-attention [data-cluster="cluster-c"][data-attention="carried"]').waitFor();
  assert.equal(
    await page.locator('#topology g[data-cluster="cluster-c"][data-side="export"]').getAttribute('data-state'),
    'warn',
  );

  // cluster-b's agent stops: its input is still used (stale) and it receives nothing new.
  await mesh.agents.get('cluster-b')?.proc.stop(3000);
  const stale = await waitForEdges(
    page,
    (e) => e.filter((x) => x.startsWith('export cluster-b') && x.endsWith(': stale')).length === 2,
    'cluster-b was not drawn as stale',
  );
  assert.ok(stale.filter((e) => e.startsWith('consume') && e.endsWith('→ cluster-b: disconnected')).length > 0);

  // cluster-a drops a destination only it has: its next output would delete too large a share, so it is held.
  rmSync(join(mesh.agents.get('cluster-a')?.manifestsDir ?? '', 'vd-productpage.yaml'));
  const held = await waitForEdges(
    page,
    (e) => e.some((x) => x.endsWith('→ cluster-a: held')),
    "cluster-a's held output was not drawn",
  );
  assert.ok(
    held.filter((e) => e.startsWith('consume') && e.includes('→ cluster-a:')).every((e) => e.endsWith(': held')),
  );
  assert.match(
    await page.locator('#topology-attention [data-cluster="cluster-a"][data-attention="held"]').innerText(),
    /would delete \d+ of \d+ resources/,
  );
  assert.match(
    (await page.locator('#topology g.topo-edge[data-state="held"] title').first().textContent()) ?? '',
    /held by the blast-radius guard/,
  );

  mkdirSync(join(ARTIFACTS_ROOT, 'ui'), { recursive: true });
  await page.locator('#topology-section').screenshot({ path: join(ARTIFACTS_ROOT, 'ui', 'topology.png') });
});
