// Semantic addresses as proxyless gRPC clients live them: one VirtualDestination backed in two
// clusters (two instances in cluster-a, three in cluster-b), with outlier detection (so its default
// host prefers the caller's locality), opted in by annotation to its policy and instance addresses,
// is dialled by its round-robin host (calls spread over every instance of both clusters), its
// closest host (the caller's locality while a backend lives there, the other cluster when none
// does) and by one instance's host, before and after that instance moves to the other cluster. The addresses
// are equal in both clusters' outputs and survive the move and a restart of the server and agents.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { NAMESPACE, XdsWorld, byCluster, type Picks } from './world.ts';

const HOST = 'db.global';
const RR = `rr.${HOST}`;
const CLOSEST = `closest.${HOST}`;
const MOVER = `mover.${HOST}`;
const CALLS = 1000;
const TOLERANCE = 0.05;

const DESTINATION = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata:
  name: db-global
  namespace: ${NAMESPACE}
  annotations: { meshrelay.io/policy-addresses: "true", meshrelay.io/instance-addresses: "true" }
spec:
  hosts: [${HOST}]
  services: [{ name: db, namespace: ${NAMESPACE} }]
  ports: [{ number: 9080, protocol: GRPC }]
---
# With outlier detection the default host is locality-first too: the round-robin host must still spread.
apiVersion: resilience.policy.gloo.solo.io/v2
kind: OutlierDetectionPolicy
metadata: { name: db-outliers, namespace: ${NAMESPACE} }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { name: db-global }
  config:
    consecutiveErrors: 2
    interval: 1s
`;

const ENTRIES = ['db-global-vd', 'db-global-vd-round-robin', 'db-global-vd-closest', 'db-global-vd-instance-mover'];

const total = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);

/** Each ServiceEntry name of ENTRIES → its address in `resources` (absent ones left out). */
function addresses(resources: readonly Resource[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of resources) {
    const list = (r.spec as { addresses?: string[] } | undefined)?.addresses;
    if (r.kind === 'ServiceEntry' && ENTRIES.includes(r.metadata.name) && list?.[0]) out[r.metadata.name] = list[0];
  }
  return out;
}

/** Asserts each backend's and each cluster's share of `picks` is its expected share ±TOLERANCE. */
function assertShares(picks: Picks, backends: readonly string[], perCluster: Record<string, number>): string {
  const n = total(picks);
  assert.equal(n, CALLS, JSON.stringify(picks));
  const shares = Object.fromEntries(backends.map((key) => [key, (picks.counts[key] ?? 0) / n]));
  for (const [key, share] of Object.entries(shares))
    assert.ok(Math.abs(share - 1 / backends.length) <= TOLERANCE, `${key}: ${share} of ${JSON.stringify(picks)}`);
  const clusters = byCluster(picks);
  for (const [cluster, expected] of Object.entries(perCluster))
    assert.ok(
      Math.abs((clusters[cluster] ?? 0) / n - expected) <= TOLERANCE,
      `${cluster}: ${JSON.stringify(clusters)}`,
    );
  return JSON.stringify({ clusters, shares });
}

const key = (cluster: string, octet: number): string => `${cluster}/v1/127.0.0.${octet}`;

test('semantic addresses through the agent', { timeout: 900_000 }, async (t) => {
  const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b']);
  await world.addBackends([
    { service: 'db', cluster: 'cluster-a', version: 'v1', octet: 81 },
    { service: 'db', cluster: 'cluster-a', version: 'v1', octet: 82, instance: 'mover' },
    { service: 'db', cluster: 'cluster-b', version: 'v1', octet: 91 },
    { service: 'db', cluster: 'cluster-b', version: 'v1', octet: 92 },
    { service: 'db', cluster: 'cluster-b', version: 'v1', octet: 93 },
  ]);
  world.mesh.writeManifest('cluster-a', 'db-global.yaml', DESTINATION);
  const all = [
    key('cluster-a', 81),
    key('cluster-a', 82),
    key('cluster-b', 91),
    key('cluster-b', 92),
    key('cluster-b', 93),
  ];
  const withAll = (o: { resources: readonly Resource[] }): boolean => Object.keys(addresses(o.resources)).length === 4;
  const [inA, inB] = [
    await world.mesh.waitForOutput('cluster-a', withAll, 90_000),
    await world.mesh.waitForOutput('cluster-b', withAll, 90_000),
  ];
  const first = addresses(inA.resources);

  await t.test(
    'given both clusters, when their outputs are read, then each semantic address is the same in both and from its pool',
    () => {
      assert.deepEqual(addresses(inB.resources), first);
      assert.match(first['db-global-vd'] ?? '', /^10\.30\./);
      assert.match(first['db-global-vd-round-robin'] ?? '', /^10\.31\./);
      assert.match(first['db-global-vd-closest'] ?? '', /^10\.32\./);
      assert.match(first['db-global-vd-instance-mover'] ?? '', /^10\.33\./);
    },
  );

  await t.test(
    'given outlier detection on the destination, when a cluster-a client dials the default host, then it stays in cluster-a',
    async () => {
      await world.until('cluster-a', HOST, (p) => (byCluster(p)['cluster-a'] ?? 0) === 20);
    },
  );

  await t.test(
    'given the round-robin host, when clients in each cluster call it, then every instance of both clusters answers an equal share (±5 %)',
    async (t) => {
      for (const cluster of ['cluster-a', 'cluster-b']) {
        await world.until(cluster, RR, (p) => Object.keys(p.counts).length === all.length);
        const measured = assertShares(await world.call(cluster, RR, CALLS), all, {
          'cluster-a': 0.4,
          'cluster-b': 0.6,
        });
        t.diagnostic(`round robin from ${cluster}, ${CALLS} calls: ${measured}`);
      }
    },
  );

  await t.test(
    'given the closest host, when a cluster-a client calls, then only cluster-a instances answer',
    async (t) => {
      const only = (p: Picks): boolean => (byCluster(p)['cluster-a'] ?? 0) === 20;
      await world.until('cluster-a', CLOSEST, only);
      const picks = await world.call('cluster-a', CLOSEST, 200);
      assert.deepEqual(byCluster(picks), { 'cluster-a': 200 });
      t.diagnostic(`closest from cluster-a: ${JSON.stringify(picks.counts)}`);
    },
  );

  await t.test(
    'given an instance address, when clients in both clusters dial it, then only that instance answers',
    async () => {
      for (const cluster of ['cluster-a', 'cluster-b']) {
        await world.until(cluster, MOVER, (p) => (p.counts[key('cluster-a', 82)] ?? 0) === 20);
        assert.deepEqual((await world.call(cluster, MOVER, 100)).counts, { [key('cluster-a', 82)]: 100 });
      }
    },
  );

  await t.test(
    'given the instance moves to cluster-b (gone first, then started there), when dialled, then its new pod answers under the same address',
    async () => {
      await world.removeBackend(82);
      await world.mesh.waitForOutput(
        'cluster-a',
        (o) => addresses(o.resources)['db-global-vd-instance-mover'] === undefined,
        60_000,
      );
      await world.addBackends([{ service: 'db', cluster: 'cluster-b', version: 'v1', octet: 94, instance: 'mover' }]);
      for (const cluster of ['cluster-a', 'cluster-b']) {
        const output = await world.mesh.waitForOutput(cluster, withAll, 60_000);
        assert.deepEqual(addresses(output.resources), first, cluster);
        await world.until(cluster, MOVER, (p) => (p.counts[key('cluster-b', 94)] ?? 0) === 20);
        assert.deepEqual((await world.call(cluster, MOVER, 100)).counts, { [key('cluster-b', 94)]: 100 });
      }
    },
  );

  await t.test(
    'given the last cluster-a instance stops, when a cluster-a client dials the closest host, then cluster-b answers; when it returns, cluster-a does again',
    async () => {
      await world.stopBackend(81);
      await world.until('cluster-a', CLOSEST, (p) => (byCluster(p)['cluster-b'] ?? 0) === 20);
      await world.restartBackend(81);
      await world.until('cluster-a', CLOSEST, (p) => (byCluster(p)['cluster-a'] ?? 0) === 20);
    },
  );

  await t.test(
    'given the server and both agents restart, when the outputs change again, then every address is the one allocated before',
    async () => {
      const server = world.mesh.servers[0];
      assert.ok(server);
      await server.proc.stop(5000);
      // The agents come back without their xDS port: this step reads the applied outputs only.
      for (const cluster of ['cluster-a', 'cluster-b']) await world.mesh.agents.get(cluster)?.proc.stop(3000);
      const restarted = await world.mesh.restartServer(server);
      for (const cluster of ['cluster-a', 'cluster-b']) await world.mesh.restartAgent(cluster, [restarted]);
      await world.addBackends([{ service: 'db', cluster: 'cluster-b', version: 'v1', octet: 95 }]);
      const has95 = (o: { resources: readonly Resource[] }): boolean =>
        JSON.stringify(o.resources).includes('127.0.0.95') && withAll(o);
      for (const cluster of ['cluster-a', 'cluster-b']) {
        const output = await world.mesh.waitForOutput(cluster, has95, 90_000);
        assert.deepEqual(addresses(output.resources), first, cluster);
      }
    },
  );
});
