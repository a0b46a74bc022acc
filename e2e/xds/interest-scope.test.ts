// Interest-scoped outputs (DESIGN §17) with real agents and real grpc-js-xds clients: a
// VirtualDestination defined and backed in cluster-a reaches cluster-b's output only while
// cluster-b holds an interest in it. A first call from cluster-b makes its agent report the host
// at once and the call succeeds; once nothing in cluster-b calls it for the (short) lease,
// cluster-b stops receiving its changes; the next call brings them back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { meshctlAt } from '../../packages/meshctl/test/harness.ts';
import { byCluster, NAMESPACE, XdsWorld, type Picks } from './world.ts';

const HOST = 'catalog.global';
const DESTINATION = `VirtualDestination/${NAMESPACE}/catalog-global@cluster-a`;
const IDLE = '8s';

const CATALOG = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: catalog-global, namespace: ${NAMESPACE} }
spec:
  hosts: [${HOST}]
  services: [{ name: catalog, namespace: ${NAMESPACE} }]
  ports: [{ number: 9080, protocol: GRPC }]
`;

interface InterestsView {
  readonly scoped: boolean;
  readonly clusters: readonly {
    readonly cluster: string;
    readonly leases: readonly { host: string; source: string; expiresAt: string }[];
  }[];
  readonly destinations: readonly { destination: string; receiving: string[]; notReceiving: string[] }[];
}

const total = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);

/** The endpoints of the catalog ServiceEntry in `output`, or undefined when it has none. */
function catalogEndpoints(output: OutputSnapshot): number | undefined {
  const entry = output.resources.find(
    (r) => r.kind === 'ServiceEntry' && ((r.spec as { hosts?: string[] }).hosts ?? []).includes(HOST),
  );
  return entry === undefined ? undefined : ((entry.spec as { endpoints?: unknown[] }).endpoints ?? []).length;
}

/** The value of the series of `name` whose labels include `labels` (e.g. `cluster="cluster-b"`); 0 when absent. */
function metricValue(text: string, name: string, labels = ''): number {
  const line = text
    .split('\n')
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('interest-scoped outputs through real agents and grpc-js-xds clients', { timeout: 600_000 }, async (t) => {
  const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b'], {
    serverFlags: ['--interest-scoped-outputs', '--interest-idle', IDLE],
    agentFlags: ['--interest-renew-interval', '1s'],
  });
  const { mesh } = world;
  const output = (cluster: string) => mesh.api<OutputSnapshot>(`/api/v1/clusters/${cluster}/output`);
  const interests = () => mesh.api<InterestsView>('/api/v1/interests');
  const receivers = async (): Promise<{ receiving: string[]; notReceiving: string[] } | undefined> =>
    (await interests()).destinations.find((d) => d.destination === DESTINATION);
  await world.addBackends([{ service: 'catalog', cluster: 'cluster-a', version: 'v1', octet: 71 }]);
  mesh.writeManifest('cluster-a', 'catalog-global.yaml', CATALOG);
  await world.until('cluster-a', HOST, (p) => (byCluster(p)['cluster-a'] ?? 0) === 20);

  await t.test(
    'given no interest, then cluster-b’s output leaves the destination out and the API says so',
    async () => {
      await waitFor(async () => (await receivers())?.notReceiving.includes('cluster-b') === true, {
        timeoutMs: 30_000,
      });
      assert.equal(catalogEndpoints(await output('cluster-b')), undefined);
      assert.deepEqual((await receivers())?.receiving, ['cluster-a']);
    },
  );

  let firstCallMs = 0;
  await t.test(
    'given no interest, when a cluster-b client makes its first call, then the call succeeds',
    async (sub) => {
      const started = performance.now();
      const first = await world.callFromNewProcess('cluster-b', HOST, 1);
      firstCallMs = performance.now() - started;
      assert.deepEqual(first, { counts: { 'cluster-a/v1/127.0.0.71': 1 }, errors: {} });
      const warmStarted = performance.now();
      const warm = await world.callFromNewProcess('cluster-b', HOST, 1);
      const warmMs = performance.now() - warmStarted;
      assert.equal(total(warm), 1, JSON.stringify(warm));
      sub.diagnostic(
        `first call to a host cluster-b had no interest in: ${Math.round(firstCallMs)} ms for the whole client ` +
          `process; with the interest held: ${Math.round(warmMs)} ms; the interest cost ${Math.round(firstCallMs - warmMs)} ms`,
      );
      const view = await interests();
      const lease = view.clusters.find((c) => c.cluster === 'cluster-b')?.leases.find((l) => l.host === HOST);
      assert.equal(lease?.source, 'xds');
      assert.ok((await receivers())?.receiving.includes('cluster-b'));
      assert.equal(catalogEndpoints(await output('cluster-b')), 1);
      const server = mesh.servers[0];
      assert.ok(server);
      assert.equal(metricValue(await mesh.metrics(server), 'meshrelay_interest_leases', 'cluster="cluster-b"'), 1);
      const listed = await meshctlAt(server.api, ['interest', 'list', '--cluster', 'cluster-b'], {
        MESHRELAY_ADMIN_TOKEN: mesh.adminToken(),
      });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /cluster-b\s+catalog\.global\s+xds\s/);
      assert.match(listed.stdout, new RegExp(`${DESTINATION}\\s+\\S*catalog\\.global\\S*\\s+cluster-b\\s`));
    },
  );

  await t.test(
    'given cluster-b stops calling, when the lease runs out, then a change to the destination does not reach cluster-b',
    async () => {
      await waitFor(async () => (await receivers())?.notReceiving.includes('cluster-b') === true, {
        timeoutMs: 30_000,
        message: 'cluster-b kept the destination after its lease should have expired',
      });
      const server = mesh.servers[0];
      assert.ok(server);
      const avoidedBefore = metricValue(await mesh.metrics(server), 'meshrelay_interest_pushes_avoided_total');
      const quiet = await output('cluster-b');
      assert.equal(catalogEndpoints(quiet), undefined);
      await world.addBackends([{ service: 'catalog', cluster: 'cluster-a', version: 'v2', octet: 72 }]);
      await waitFor(async () => catalogEndpoints(await output('cluster-a')) === 2, { timeoutMs: 30_000 });
      await waitFor(
        async () => metricValue(await mesh.metrics(server), 'meshrelay_interest_pushes_avoided_total') > avoidedBefore,
        { timeoutMs: 10_000, message: 'the change cluster-b was spared was not counted' },
      );
      assert.equal((await output('cluster-b')).hash, quiet.hash, 'cluster-b was sent a change it has no interest in');
    },
  );

  await t.test(
    'given the lease ran out, when cluster-b calls again, then it gets the destination back, current',
    async (sub) => {
      const started = performance.now();
      const again = await world.callFromNewProcess('cluster-b', HOST, 1);
      sub.diagnostic(`call after the lease ran out: ${Math.round(performance.now() - started)} ms`);
      assert.equal(total(again), 1, JSON.stringify(again));
      assert.equal(catalogEndpoints(await output('cluster-b')), 2);
      const both = await world.until('cluster-b', HOST, (p) => Object.keys(p.counts).length === 2);
      assert.deepEqual(Object.keys(both.counts).sort(), ['cluster-a/v1/127.0.0.71', 'cluster-a/v2/127.0.0.72']);
      assert.ok(firstCallMs > 0);
    },
  );
});

test('interest leases survive restarts of the server and of the agent', { timeout: 600_000 }, async (t) => {
  const agentFlags = ['--interest-renew-interval', '1s'];
  const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b'], {
    serverFlags: ['--interest-scoped-outputs', '--interest-idle', '10m'],
    agentFlags,
  });
  const { mesh } = world;
  const output = (cluster: string) => mesh.api<OutputSnapshot>(`/api/v1/clusters/${cluster}/output`);
  const leaseOf = async () =>
    (await mesh.api<InterestsView>('/api/v1/interests')).clusters
      .find((c) => c.cluster === 'cluster-b')
      ?.leases.find((l) => l.host === HOST);
  await world.addBackends([{ service: 'catalog', cluster: 'cluster-a', version: 'v1', octet: 81 }]);
  mesh.writeManifest('cluster-a', 'catalog-global.yaml', CATALOG);
  await world.until('cluster-a', HOST, (p) => (byCluster(p)['cluster-a'] ?? 0) === 20);
  assert.equal(total(await world.callFromNewProcess('cluster-b', HOST, 1)), 1);
  const lease = await leaseOf();
  assert.ok(lease, 'the first call took a lease');

  await t.test('given a lease and no caller, when the server restarts, then it holds the same lease', async () => {
    const server = mesh.servers[0];
    assert.ok(server);
    await mesh.restartServer(server);
    // Nothing in cluster-b subscribes now, so an unchanged expiry can only come from the stored lease.
    assert.deepEqual(await leaseOf(), lease);
    await waitFor(async () => catalogEndpoints(await output('cluster-b')) === 1, { timeoutMs: 30_000 });
  });

  await t.test(
    'given a lease, when cluster-b’s agent restarts, then the destination stays and calls succeed',
    async () => {
      const agent = mesh.agents.get('cluster-b');
      assert.ok(agent);
      await agent.proc.stop(3000);
      const restarted = await mesh.startAgent('cluster-b', {
        keepDirs: true,
        extraFlags: ['--xds-port', String(world.xdsPorts.get('cluster-b')), ...agentFlags],
      });
      await restarted.proc.waitForLine(/xds server listening/, 30_000);
      assert.equal(catalogEndpoints(await output('cluster-b')), 1);
      const picks = await world.until('cluster-b', HOST, (p) => total(p) === 20);
      assert.deepEqual(byCluster(picks), { 'cluster-a': 20 });
    },
  );
});
