// Names belong to workspaces, end to end: a real meshrelay-server with --workspaces-file, real
// redis-server and two meshrelay-agent processes. team-b's cluster apps-b (its name sorts before
// cluster-a) defines the VirtualDestination and AccessPolicy names team-a uses in cluster-a, in
// a namespace of its own workspace. cluster-a's applied output must not change.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, listResources, type ListedResource, type OutputOnDisk } from './mesh.ts';

const WORKSPACES = `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: { name: team-a, namespace: gloo-mesh }
spec:
  workloadClusters:
    - name: cluster-a
      namespaces: [{ name: bookinfo }]
---
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: { name: team-b, namespace: gloo-mesh }
spec:
  workloadClusters:
    - name: apps-b
      namespaces: [{ name: '*' }]
`;

/** team-b's manifests: a ratings Service, and team-a's names (reviews-global, reviews-access) for it. */
const TEAM_B = `apiVersion: v1
kind: Service
metadata: { name: ratings, namespace: bookinfo, labels: { app: ratings } }
spec:
  selector: { app: ratings }
  ports: [{ name: http, port: 9080 }]
---
apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: reviews-global, namespace: bookinfo }
spec:
  hosts: [ratings.global]
  services: [{ name: ratings, namespace: bookinfo }]
  ports: [{ number: 9080, protocol: HTTP }]
---
apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata: { name: reviews-access, namespace: bookinfo }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { name: reviews-global }
  config:
    authz:
      allowedClients:
        - serviceAccountSelector: { name: nobody, namespace: elsewhere }
`;

function teamBFixture(dir: string): string {
  const target = join(dir, 'fixture-apps-b');
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, 'team-b.yaml'), TEAM_B);
  return target;
}

function reviewsEntry(output: OutputOnDisk): boolean {
  return output.resources.some(
    (r) => r.kind === 'ServiceEntry' && ((r.spec as { hosts?: string[] }).hosts ?? []).includes('reviews.global'),
  );
}

function hasDirectResponse500(output: OutputOnDisk): boolean {
  return output.resources.some(
    (r) => r.kind === 'VirtualService' && /"directResponse":\{"status":500/.test(JSON.stringify(r.spec)),
  );
}

test(
  "given strict workspaces, when team-b's apps-b defines team-a's names, then cluster-a's applied output is unchanged",
  { timeout: 150_000 },
  async (t) => {
    const mesh = await Mesh.start(t);
    const workspacesFile = join(mesh.dir, 'workspaces.yaml');
    writeFileSync(workspacesFile, WORKSPACES);
    await mesh.startServer('mgmt-0', ['--workspaces-file', workspacesFile]);
    await mesh.register('cluster-a');
    await mesh.register('apps-b');
    await mesh.startAgent('cluster-a', { from: 'cluster-a' });
    const before = await mesh.waitForOutput(
      'cluster-a',
      reviewsEntry,
      30_000,
      'the reviews.global ServiceEntry in cluster-a',
    );
    assert.equal(hasDirectResponse500(before), false);

    await mesh.startAgent('apps-b', { from: teamBFixture(mesh.dir) });
    // Listed means the translation that saw apps-b's resources has run: outputs are the server's current ones.
    let listed: ListedResource[] = [];
    await waitFor(
      async () => {
        listed = (await listResources(mesh, 'cluster=apps-b')).filter(
          (r) => r.kind === 'VirtualDestination' || r.kind === 'AccessPolicy',
        );
        return listed.length === 2;
      },
      { timeoutMs: 30_000, message: "apps-b's VirtualDestination and AccessPolicy listed by the API" },
    );
    for (const resource of listed)
      assert.equal(resource.approval, 'ACCEPTED', `${resource.source}: ${resource.message}`);
    await mesh.waitForOutput(
      'apps-b',
      (o) =>
        o.resources.some(
          (r) => r.kind === 'ServiceEntry' && ((r.spec as { hosts?: string[] }).hosts ?? []).includes('ratings.global'),
        ),
      30_000,
      'the ratings.global ServiceEntry in apps-b',
    );

    const server = (await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-a/output')).hash;
    assert.equal(server, before.hash);
    const after = mesh.readOutput('cluster-a');
    assert.equal(after?.hash, before.hash);
    assert.ok(after && reviewsEntry(after));
    assert.equal(after && hasDirectResponse500(after), false);
    const own = (await listResources(mesh, 'cluster=cluster-a')).filter(
      (r) => r.name === 'reviews-global' || r.name === 'reviews-access',
    );
    assert.equal(own.length, 2);
    for (const resource of own) assert.equal(resource.approval, 'ACCEPTED', `${resource.source}: ${resource.message}`);
  },
);
