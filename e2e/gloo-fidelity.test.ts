// Gloo fidelity end to end: a real meshrelay-server and two meshrelay-agent processes on copies
// of examples/cluster-a and examples/cluster-b. A broken AccessPolicy travels up from its agent
// and fails closed in every cluster; a bad resource never freezes another cluster's changes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SOURCES_ANNOTATION } from '@meshrelay/api';
import { Mesh, hasResource, virtualDestinationYaml } from './mesh.ts';

async function twoClusterMesh(t: Parameters<typeof Mesh.start>[0]): Promise<Mesh> {
  const mesh = await Mesh.start(t, { redis: false });
  await mesh.startServer();
  await mesh.register('cluster-a');
  await mesh.register('cluster-b');
  await mesh.startAgent('cluster-a', { from: 'cluster-a' });
  await mesh.startAgent('cluster-b', { from: 'cluster-b' });
  for (const cluster of ['cluster-a', 'cluster-b']) {
    await mesh.waitForOutput(cluster, (o) => o.provenance.length === 2, 30_000, `first output of ${cluster}`);
  }
  return mesh;
}

const BROKEN_POLICY = `apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata:
  name: reviews-locked
  namespace: bookinfo
spec:
  applyToWorkloads:
    - selector:
        namespace: bookinfo
        labels: { app: reviews }
  config:
    authz:
      allowedHosts: [reviews.example.com]
`;

const ODD_NAMESPACE_POLICY = `apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata:
  name: odd
  namespace: bookinfo
spec:
  applyToWorkloads:
    - selector:
        namespace: Not A Namespace
        labels: { app: reviews }
  config:
    authz: {}
`;

test('given an AccessPolicy with a field Gloo does not define, when its agent reads it, then it travels up and the workloads it selects deny every request in both clusters', async (t) => {
  const mesh = await twoClusterMesh(t);
  mesh.writeManifest('cluster-a', 'broken-policy.yaml', BROKEN_POLICY);
  for (const cluster of ['cluster-a', 'cluster-b']) {
    const out = await mesh.waitForOutput(
      cluster,
      (o) => hasResource(o, 'AuthorizationPolicy', 'reviews-locked'),
      30_000,
      `deny-by-default in ${cluster}`,
    );
    const ap = out.resources.find(
      (r) => r.kind === 'AuthorizationPolicy' && r.metadata.name.includes('reviews-locked'),
    );
    assert.deepEqual(ap?.spec, { selector: { matchLabels: { app: 'reviews' } } });
    assert.equal(ap?.metadata.annotations?.[SOURCES_ANNOTATION], 'AccessPolicy/bookinfo/reviews-locked@cluster-a');
  }
});

test("given an AccessPolicy in cluster-b whose selector.namespace is any string, when cluster-a changes, then cluster-a's output still ships the change", async (t) => {
  const mesh = await twoClusterMesh(t);
  mesh.writeManifest('cluster-b', 'odd-policy.yaml', ODD_NAMESPACE_POLICY);
  mesh.writeManifest('cluster-a', 'vd-ratings.yaml', virtualDestinationYaml('ratings', 'ratings.global'));
  const out = await mesh.waitForOutput(
    'cluster-a',
    (o) => hasResource(o, 'ServiceEntry', 'ratings'),
    30_000,
    'the ratings destination in cluster-a',
  );
  assert.equal(
    out.resources.some((r) => r.metadata.name.startsWith('odd-')),
    false,
  );
});
