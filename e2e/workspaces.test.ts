// Workspaces end to end: a real meshrelay-server started with --workspaces-file (team-a owns
// bookinfo in cluster-a, team-b owns web in cluster-b), real redis-server, and two
// meshrelay-agent processes (file provider). One mesh serves every subtest, in order.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import type { Resource } from '@meshrelay/api';
import { Mesh, ROOT, listResources, type OutputOnDisk } from './mesh.ts';

const WORKSPACES = `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: { name: team-a, namespace: gloo-mesh, labels: { team: a } }
spec:
  workloadClusters:
    - name: cluster-a
      namespaces: [{ name: bookinfo }]
---
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: { name: team-b, namespace: gloo-mesh, labels: { team: b } }
spec:
  workloadClusters:
    - name: cluster-b
      namespaces: [{ name: web }]
    - name: apps-b
      namespaces: [{ name: '*' }]
`;

/** team-a imports from team-b and isolates its services. */
const TEAM_A_SETTINGS = `apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: { name: team-a, namespace: bookinfo }
spec:
  importFrom:
    - workspaces: [{ name: team-b }]
  options:
    serviceIsolation: { enabled: true }
`;

/** team-b exports its VirtualDestinations to team-a and defines one, backed by its catalog Service. */
const TEAM_B_CONFIG = `apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: { name: team-b, namespace: web }
spec:
  exportTo:
    - workspaces: [{ selector: { team: a } }]
      resources: [{ kind: VIRTUAL_DESTINATION }]
---
apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: catalog-global, namespace: web }
spec:
  hosts: [catalog.global]
  services: [{ name: catalog, namespace: web }]
  ports: [{ number: 9080, protocol: HTTP }]
`;

/** A RouteTable cluster-b pushes for a host in the namespace team-a owns in cluster-a. */
const HIJACK = `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: { name: hijack, namespace: bookinfo }
spec:
  hosts: [reviews.bookinfo.svc.cluster.local]
  http:
    - name: all
      directResponse: { status: 503 }
`;

/** cluster-b's manifests: its gateway and nodes, and a catalog Service in web (reviews renamed). */
function clusterBFixture(dir: string): string {
  const target = join(dir, 'fixture-cluster-b');
  mkdirSync(target, { recursive: true });
  for (const file of ['eastwest-gateway.yaml', 'nodes.yaml'])
    writeFileSync(join(target, file), readFileSync(join(ROOT, 'examples', 'cluster-b', file)));
  const reviews = readFileSync(join(ROOT, 'examples', 'cluster-b', 'reviews.yaml'), 'utf8');
  writeFileSync(join(target, 'catalog.yaml'), reviews.replaceAll('bookinfo', 'web').replaceAll('reviews', 'catalog'));
  writeFileSync(join(target, 'team-b.yaml'), TEAM_B_CONFIG);
  return target;
}

/** team-b's cluster apps-b (its name sorts before cluster-a) defines team-a's names in its own bookinfo. */
const IMPOSTOR = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: reviews-global, namespace: bookinfo }
spec:
  hosts: [impostor.global]
  services: [{ name: reviews, namespace: bookinfo }]
  ports: [{ number: 9080, protocol: HTTP }]
---
apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata: { name: reviews-access, namespace: bookinfo }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { name: reviews-global, namespace: bookinfo }
  config:
    authz:
      allowedClients: [{ serviceAccountSelector: { name: nobody, namespace: bookinfo } }]
`;

/** apps-b's manifests: cluster-b's gateway, nodes and reviews, and the same-named resources. */
function appsBFixture(dir: string): string {
  const target = join(dir, 'fixture-apps-b');
  mkdirSync(target, { recursive: true });
  for (const file of ['eastwest-gateway.yaml', 'nodes.yaml', 'reviews.yaml'])
    writeFileSync(join(target, file), readFileSync(join(ROOT, 'examples', 'cluster-b', file)));
  writeFileSync(join(target, 'impostor.yaml'), IMPOSTOR);
  return target;
}

function find(
  output: OutputOnDisk,
  kind: string,
  predicate: (r: Resource) => boolean = () => true,
): Resource | undefined {
  return output.resources.find((r) => r.kind === kind && predicate(r));
}

test('given two teams in workspaces over cluster-a and cluster-b', async (t) => {
  const mesh = await Mesh.start(t);
  const workspacesFile = join(mesh.dir, 'workspaces.yaml');
  writeFileSync(workspacesFile, WORKSPACES);
  await mesh.startServer('mgmt-0', ['--workspaces-file', workspacesFile]);
  await mesh.register('cluster-a');
  await mesh.register('cluster-b');
  await mesh.startAgent('cluster-a', { from: 'cluster-a' });
  mesh.writeManifest('cluster-a', 'team-a.yaml', TEAM_A_SETTINGS);
  await mesh.startAgent('cluster-b', { from: clusterBFixture(mesh.dir) });

  await t.test(
    "when team-b exports its VirtualDestination and team-a imports it, then cluster-a's output has it with exportTo naming team-a's namespaces",
    async () => {
      const out = await mesh.waitForOutput(
        'cluster-a',
        (o) => find(o, 'ServiceEntry', (r) => r.metadata.name.startsWith('catalog-global')) !== undefined,
        30_000,
        'the catalog destination in cluster-a',
      );
      const entry = find(out, 'ServiceEntry', (r) => r.metadata.name.startsWith('catalog-global'));
      assert.deepEqual((entry?.spec as { exportTo?: string[] }).exportTo, ['bookinfo', 'web']);
      assert.deepEqual((entry?.spec as { hosts?: string[] }).hosts, ['catalog.global']);
    },
  );

  await t.test(
    "when team-a's WorkspaceSettings enable serviceIsolation, then cluster-a applies STRICT mTLS and a DENY for callers outside team-a and its importers",
    async () => {
      const out = await mesh.waitForOutput(
        'cluster-a',
        (o) => find(o, 'PeerAuthentication', (r) => r.metadata.name.includes('isolation')) !== undefined,
        30_000,
        'isolation in cluster-a',
      );
      const peer = find(out, 'PeerAuthentication', (r) => r.metadata.name.includes('isolation'));
      assert.equal(peer?.metadata.namespace, 'bookinfo');
      assert.deepEqual(peer?.spec, { mtls: { mode: 'STRICT' } });
      const deny = find(out, 'AuthorizationPolicy', (r) => r.metadata.name.includes('isolation'));
      assert.equal(deny?.metadata.namespace, 'bookinfo');
      assert.deepEqual(deny?.spec, {
        action: 'DENY',
        rules: [{ from: [{ source: { notPrincipals: ['cluster.local/ns/bookinfo/sa/*'] } }] }],
      });
    },
  );

  await t.test(
    "when cluster-b pushes a RouteTable in the namespace team-a owns in cluster-a, then cluster-a's applied output is unchanged and the RouteTable is INVALID",
    async () => {
      const before = mesh.readOutput('cluster-a');
      assert.ok(before);
      mesh.writeManifest('cluster-b', 'hijack.yaml', HIJACK);
      // Listed means the translation that saw the RouteTable has run: its outputs are the server's current ones.
      let hijack: Awaited<ReturnType<typeof listResources>>[number] | undefined;
      await waitFor(
        async () => {
          hijack = (await listResources(mesh, 'kind=RouteTable&cluster=cluster-b')).find((r) => r.name === 'hijack');
          return hijack !== undefined;
        },
        { timeoutMs: 20_000, message: 'the hijack RouteTable listed by the API' },
      );
      assert.equal(hijack?.approval, 'INVALID');
      assert.match(hijack?.message ?? '', /namespace bookinfo of cluster cluster-b belongs to no workspace/);
      assert.deepEqual(hijack?.outputs, []);
      const server = (await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-a/output')).hash;
      assert.equal(server, before.hash);
      assert.equal(mesh.readOutput('cluster-a')?.hash, before.hash);
    },
  );

  await t.test(
    "when team-b's cluster apps-b (sorting first) defines team-a's VirtualDestination and AccessPolicy names, then cluster-a keeps its ServiceEntry, DestinationRule, routes and policy",
    async () => {
      await mesh.register('apps-b');
      await mesh.startAgent('apps-b', { from: appsBFixture(mesh.dir) });
      await waitFor(
        async () =>
          (await listResources(mesh, 'kind=VirtualDestination&cluster=apps-b')).some(
            (r) => r.name === 'reviews-global',
          ),
        { timeoutMs: 30_000, message: "apps-b's VirtualDestination listed by the API" },
      );
      const server = (await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-a/output')).hash;
      const out = await mesh.waitForOutput(
        'cluster-a',
        (o) => o.hash === server,
        30_000,
        "cluster-a's output after apps-b's resources",
      );
      const hostOf = (r: Resource | undefined): unknown =>
        (r?.spec as { host?: string; hosts?: string[] } | undefined)?.hosts ??
        (r?.spec as { host?: string } | undefined)?.host;
      assert.deepEqual(hostOf(find(out, 'ServiceEntry', (r) => r.metadata.name.startsWith('reviews-global'))), [
        'reviews.global',
      ]);
      assert.equal(
        hostOf(find(out, 'DestinationRule', (r) => r.metadata.name.startsWith('reviews-global'))),
        'reviews.global',
      );
      const routes = JSON.stringify(
        find(out, 'VirtualService', (r) => r.metadata.name.startsWith('reviews-routes'))?.spec,
      );
      assert.equal(routes.includes('directResponse'), false, routes);
      assert.equal(routes.includes('impostor'), false, routes);
      assert.equal(JSON.stringify(out.resources).includes('impostor.global'), false);
      const policy = JSON.stringify(
        find(out, 'AuthorizationPolicy', (r) => r.metadata.name.startsWith('reviews-access'))?.spec,
      );
      assert.match(policy, /bookinfo-productpage/);
      const listed = await listResources(mesh, 'cluster=cluster-a');
      for (const name of ['reviews-global', 'reviews-access'])
        assert.equal(listed.find((r) => r.name === name)?.approval, 'ACCEPTED', name);
    },
  );
});
