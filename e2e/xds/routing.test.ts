// Traffic as the acceptance test: real grpc-js-xds clients read routes and endpoints from their
// cluster's agent and call real gRPC backends; each case counts which backend answered.
// One world for the file: cluster-a with reviews v1/v2, ratings v1/v2 and details; cluster-b
// with details. Gloo RouteTables in cluster-a's manifests shape the routes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byCluster, byVersion, NAMESPACE, XdsWorld, type Picks } from './world.ts';

const FQDN = (service: string): string => `${service}.${NAMESPACE}.svc.cluster.local`;

const ROUTE_TABLES = `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: { name: reviews, namespace: ${NAMESPACE} }
spec:
  hosts: [${FQDN('reviews')}]
  http:
    - name: jason
      matchers: [{ headers: [{ name: end-user, value: jason }] }]
      forwardTo: { destinations: [{ ref: { name: reviews, namespace: ${NAMESPACE} }, subset: { version: v2 } }] }
    - name: everyone-else
      forwardTo: { destinations: [{ ref: { name: reviews, namespace: ${NAMESPACE} }, subset: { version: v1 } }] }
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: { name: ratings, namespace: ${NAMESPACE} }
spec:
  hosts: [${FQDN('ratings')}]
  http:
    - name: split
      forwardTo:
        destinations:
          - { ref: { name: ratings, namespace: ${NAMESPACE} }, subset: { version: v1 }, weight: 80 }
          - { ref: { name: ratings, namespace: ${NAMESPACE} }, subset: { version: v2 }, weight: 20 }
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: { name: details, namespace: ${NAMESPACE} }
spec:
  hosts: [${FQDN('details')}]
  http:
    - name: to-cluster-b
      matchers: [{ headers: [{ name: x-cluster, value: b }] }]
      forwardTo: { destinations: [{ ref: { name: details, namespace: ${NAMESPACE}, cluster: cluster-b } }] }
    - name: local
      forwardTo: { destinations: [{ ref: { name: details, namespace: ${NAMESPACE} } }] }
`;

const total = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);
const failures = (p: Picks): number => Object.values(p.errors).reduce((a, b) => a + b, 0);

test('proxyless gRPC through the agent', { timeout: 600_000 }, async (t) => {
  const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b']);
  {
    // Seven backends; the RouteTables go in once every backend is registered.
    await world.addBackends([
      { service: 'reviews', cluster: 'cluster-a', version: 'v1', octet: 11 },
      { service: 'reviews', cluster: 'cluster-a', version: 'v2', octet: 12 },
      { service: 'ratings', cluster: 'cluster-a', version: 'v1', octet: 21 },
      { service: 'ratings', cluster: 'cluster-a', version: 'v2', octet: 22 },
      { service: 'details', cluster: 'cluster-a', version: 'v1', octet: 31 },
      { service: 'details', cluster: 'cluster-b', version: 'v1', octet: 41 },
      { service: 'details', cluster: 'cluster-b', version: 'v1', octet: 42 },
    ]);
    world.mesh.writeManifest('cluster-a', 'route-tables.yaml', ROUTE_TABLES);
  }

  await t.test(
    'given a header match, when a user calls, then the matching subset answers every time and others get the rest',
    async () => {
      await world.until('cluster-a', FQDN('reviews'), (p) => byVersion(p)['v2'] === total(p) && total(p) > 0, {
        'end-user': 'jason',
      });
      const jason = await world.call('cluster-a', FQDN('reviews'), 200, { 'end-user': 'jason' });
      assert.deepEqual(byVersion(jason), { v2: 200 }, JSON.stringify(jason));
      const other = await world.call('cluster-a', FQDN('reviews'), 200, { 'end-user': 'alice' });
      assert.deepEqual(byVersion(other), { v1: 200 }, JSON.stringify(other));
    },
  );

  await t.test(
    'given an 80/20 weight split, when 2,000 calls are made, then v1 answers 80 % within 5 points',
    async (sub) => {
      await world.until(
        'cluster-a',
        FQDN('ratings'),
        (p) => (byVersion(p)['v1'] ?? 0) > 0 && (byVersion(p)['v2'] ?? 0) > 0,
      );
      const picks = await world.call('cluster-a', FQDN('ratings'), 2000);
      assert.equal(failures(picks), 0, JSON.stringify(picks));
      const share = (byVersion(picks)['v1'] ?? 0) / 2000;
      sub.diagnostic(`v1 share over 2,000 calls: ${(share * 100).toFixed(1)} %`);
      assert.ok(Math.abs(share - 0.8) <= 0.05, `v1 share ${share.toFixed(3)} (picks ${JSON.stringify(picks)})`);
    },
  );

  await t.test(
    'given a destination on a Service in cluster-b (ref.cluster), when called from cluster-a, then cluster-b backends answer',
    async () => {
      const picks = await world.until('cluster-a', FQDN('details'), (p) => (byCluster(p)['cluster-b'] ?? 0) === 20, {
        'x-cluster': 'b',
      });
      assert.deepEqual(byCluster(picks), { 'cluster-b': 20 });
      const both = await world.call('cluster-a', FQDN('details'), 100, { 'x-cluster': 'b' });
      assert.deepEqual(
        Object.keys(both.counts).sort(),
        ['cluster-b/v1/127.0.0.41', 'cluster-b/v1/127.0.0.42'],
        'both cluster-b backends take calls',
      );
      const local = await world.call('cluster-a', FQDN('details'), 20);
      assert.deepEqual(byCluster(local), { 'cluster-a': 20 });
    },
  );

  await t.test(
    'given an endpoint added and then removed in cluster-b, when a cluster-a client calls, then its picks follow',
    async (sub) => {
      const has = (p: Picks, address: string): boolean => Object.keys(p.counts).some((k) => k.endsWith(`/${address}`));
      let started = performance.now();
      await world.addBackends([{ service: 'details', cluster: 'cluster-b', version: 'v1', octet: 43 }]);
      await world.until('cluster-a', FQDN('details'), (p) => has(p, '127.0.0.43'), { 'x-cluster': 'b' });
      sub.diagnostic(
        `endpoint added in cluster-b reached a cluster-a client's picks in ${Math.round(performance.now() - started)} ms`,
      );
      started = performance.now();
      await world.removeBackend(41);
      const after = await world.until('cluster-a', FQDN('details'), (p) => !has(p, '127.0.0.41') && failures(p) === 0, {
        'x-cluster': 'b',
      });
      sub.diagnostic(
        `endpoint removed in cluster-b left a cluster-a client's picks in ${Math.round(performance.now() - started)} ms`,
      );
      assert.deepEqual(Object.keys(after.counts).sort(), ['cluster-b/v1/127.0.0.42', 'cluster-b/v1/127.0.0.43']);
    },
  );
});
