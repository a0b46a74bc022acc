// GET /api/v1/topology against a real server with real mTLS relay clients:
// clusters, the VirtualDestinations their outputs hold, and the edges
// exporter → destination → consumer with the state of each.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildEndpointSlice, waitFor } from '@meshrelay/testkit';
import type { TopologyView } from '../src/http/topology-view.ts';
import {
  apiGet,
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  virtualDestination,
  type PushStream,
  type TestServer,
} from './harness.ts';

const DESTINATION = 'VirtualDestination/default/checkout@east';
/** The relay clients here send no heartbeats: the server must not close their streams while a test looks. */
const PATIENT = ['--heartbeat-timeout', '60s'];

function checkoutEndpoints(ip: string): Resource {
  return buildEndpointSlice({
    service: 'checkout',
    namespace: 'default',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: [{ ip }],
  });
}

/**
 * Registers `cluster`, opens its push stream and pushes `resources`; the stream stays open (the cluster is connected)
 * until ended.
 */
async function connect(
  t: TestContext,
  server: TestServer,
  cluster: string,
  resources: Resource[],
): Promise<PushStream> {
  const stream = openPush(mtlsClient(t, server, await registerCluster(server, cluster)));
  t.after(() => stream.end());
  pushSnapshot(stream, cluster, 1, resources);
  await next(stream, (m) => m.ack ?? undefined);
  return stream;
}

/** east defines checkout and backs it; west backs it too; north is registered and never connects. */
async function twoExporters(t: TestContext): Promise<{ server: TestServer; west: PushStream }> {
  const server = await startTestServer(t, PATIENT);
  await connect(t, server, 'east', [
    service('checkout'),
    checkoutEndpoints('10.1.0.5'),
    virtualDestination('checkout'),
  ]);
  const west = await connect(t, server, 'west', [service('checkout'), checkoutEndpoints('10.2.0.5')]);
  await server.registry.register('north', {});
  await waitFor(async () => (await topology(server)).edges.length === 4, {
    message: 'the topology never showed both exporters and both consumers',
  });
  return { server, west };
}

function topology(server: TestServer): Promise<TopologyView> {
  return apiGet<TopologyView>(server, '/api/v1/topology');
}

function edgeStates(view: TopologyView): string[] {
  return view.edges.map((e) => `${e.role} ${e.from} → ${e.to}: ${e.state}`);
}

test('given two clusters backing a VirtualDestination one of them defines, then the topology names it with both exporters and both consumers', async (t) => {
  const { server } = await twoExporters(t);
  const view = await topology(server);
  assert.equal(view.replica, 'test-0');
  assert.deepEqual(view.destinations, [
    { id: DESTINATION, name: 'checkout', namespace: 'default', definedIn: 'east', hosts: ['checkout.global'] },
  ]);
  assert.deepEqual(edgeStates(view), [
    `consume ${DESTINATION} → east: current`,
    `consume ${DESTINATION} → west: current`,
    `export east → ${DESTINATION}: current`,
    `export west → ${DESTINATION}: current`,
  ]);
  assert.deepEqual(
    view.clusters.map((c) => [c.name, c.connected, c.warm, c.contribution]),
    [
      ['east', true, true, 'current'],
      ['north', false, false, 'none'],
      ['west', true, true, 'current'],
    ],
  );
  assert.deepEqual(view.safeMode, { active: false, missing: [] });
});

test("given a connected topology, when west disconnects and east's output is held, then the edges say stale, disconnected and held", async (t) => {
  const { server, west } = await twoExporters(t);
  west.end();
  await waitFor(async () => (await topology(server)).clusters.find((c) => c.name === 'west')?.connected === false, {
    message: 'west still shows connected',
  });
  server.held.hold(
    {
      cluster: 'east',
      hash: 'c'.repeat(64),
      reason: 'delete-share',
      message: 'would delete 6 of 8 resources (75 % > 50 %)',
      deleted: 6,
      held: 8,
      missingClusters: [],
    },
    new Date(),
  );

  const view = await topology(server);
  assert.deepEqual(edgeStates(view), [
    `consume ${DESTINATION} → east: held`,
    `consume ${DESTINATION} → west: disconnected`,
    `export east → ${DESTINATION}: current`,
    `export west → ${DESTINATION}: stale`,
  ]);
  const byName = new Map(view.clusters.map((c) => [c.name, c]));
  assert.equal(byName.get('west')?.contribution, 'stale');
  assert.match(byName.get('west')?.disconnectedSince ?? '', /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(
    { ...byName.get('east')?.heldOutput, since: undefined },
    {
      hash: 'c'.repeat(64),
      message: 'would delete 6 of 8 resources (75 % > 50 %)',
      replica: 'test-0',
      since: undefined,
    },
  );
});

test('given no admin token or a wrong one, when GET /api/v1/topology, then 401 MESHRELAY_ERR_UNAUTHENTICATED and no topology', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  for (const headers of [{}, { authorization: 'Bearer not-the-admin-token' }]) {
    const res = await fetch(`${server.api}/api/v1/topology`, { headers });
    assert.equal(res.status, 401, JSON.stringify(headers));
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body['code'], 'MESHRELAY_ERR_UNAUTHENTICATED');
    assert.equal(body['clusters'], undefined);
  }
  assert.deepEqual(
    (await topology(server)).clusters.map((c) => c.name),
    ['east'],
  );
});
