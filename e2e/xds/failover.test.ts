// Locality failover through the agent's xDS: a VirtualDestination backed in two clusters, with
// an OutlierDetectionPolicy (Istio applies locality priorities only with outlier detection).
// A cluster-a client prefers the cluster-a backend; when it stops, calls move to cluster-b;
// when it returns, they come back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byCluster, NAMESPACE, XdsWorld, type Picks } from './world.ts';

const HOST = 'catalog.global';

const POLICY = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: catalog-global, namespace: ${NAMESPACE} }
spec:
  hosts: [${HOST}]
  services: [{ name: catalog, namespace: ${NAMESPACE} }]
  ports: [{ number: 9080, protocol: GRPC }]
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: OutlierDetectionPolicy
metadata: { name: catalog-outliers, namespace: ${NAMESPACE} }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { name: catalog-global }
  config:
    consecutiveErrors: 2
    interval: 1s
`;

const only =
  (cluster: string) =>
  (p: Picks): boolean =>
    (byCluster(p)[cluster] ?? 0) === 20;

test('locality failover through the agent', { timeout: 600_000 }, async (t) => {
  const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b']);
  await world.addBackends([
    { service: 'catalog', cluster: 'cluster-a', version: 'v1', octet: 51 },
    { service: 'catalog', cluster: 'cluster-b', version: 'v1', octet: 61 },
  ]);
  world.mesh.writeManifest('cluster-a', 'catalog-global.yaml', POLICY);

  await t.test(
    'given both clusters up, when a cluster-a client calls, then only the cluster-a backend answers',
    async () => {
      await world.until('cluster-a', HOST, only('cluster-a'));
      assert.deepEqual(byCluster(await world.call('cluster-a', HOST, 100)), { 'cluster-a': 100 });
    },
  );

  await t.test('given the cluster-a backend stops, when the client calls, then cluster-b answers', async () => {
    await world.stopBackend(51);
    const picks = await world.until('cluster-a', HOST, only('cluster-b'));
    assert.deepEqual(byCluster(picks), { 'cluster-b': 20 });
  });

  await t.test(
    'given the cluster-a backend returns, when the client calls, then calls come back to cluster-a',
    async () => {
      await world.restartBackend(51);
      const picks = await world.until('cluster-a', HOST, only('cluster-a'));
      assert.deepEqual(byCluster(picks), { 'cluster-a': 20 });
    },
  );
});
