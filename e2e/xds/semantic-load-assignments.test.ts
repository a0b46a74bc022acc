// What proxyless gRPC clients are sent for the round-robin and closest hosts (of a destination
// opted in to them) when the other cluster is reached through its east-west gateway (the e2e world
// has no gateway): the translator's output for cluster-a, served by the agent's xDS translation to
// a proxy in cluster-a's locality. Round robin: both localities in priority 0, each weighted by its
// instances (1 here, 3 behind the gateway). Closest: the proxy's own locality first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildNode,
  buildPod,
  buildService,
  buildTestInputSnapshot,
  buildVirtualDestination,
} from '@meshrelay/testkit';
import {
  POLICY_ADDRESSES_ANNOTATION,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { buildXdsConfig, loadAssignmentsFor } from '@meshrelay/xds';

function db(cluster: 'a' | 'b', ips: readonly string[]): Resource[] {
  const node = `node-${cluster}`;
  const region = cluster === 'a' ? 'us-east' : 'us-west';
  return [
    buildNode({ name: node, region, zone: `${region}-1` }),
    buildService({ name: 'db', namespace: 'shop', ports: [{ name: 'grpc', port: 7000 }], selector: { app: 'db' } }),
    buildEndpointSlice({
      service: 'db',
      namespace: 'shop',
      ports: [{ name: 'grpc', port: 7000 }],
      endpoints: ips.map((ip, i) => ({ ip, pod: `db-${cluster}-${i}`, node })),
    }),
    ...ips.map((ip, i) => buildPod({ name: `db-${cluster}-${i}`, namespace: 'shop', ip, node, labels: { app: 'db' } })),
  ];
}

interface LocalityEndpoints {
  readonly locality: { region: string };
  readonly load_balancing_weight: { value: number };
  readonly priority: number;
}

/** Per region: [priority, weight] of the load assignment of `host` for a proxy in us-east. */
function assignment(output: readonly Resource[], host: string): Record<string, [number, number]> {
  const config = buildXdsConfig({ cluster: 'cluster-a', output, discovered: [] });
  const name = `outbound|7000||${host}`;
  const cla = loadAssignmentsFor(config, { region: 'us-east', zone: 'us-east-1' }, [name]).get(name);
  assert.ok(cla, `no load assignment for ${name}`);
  const body = cla.body as { endpoints: LocalityEndpoints[] };
  return Object.fromEntries(
    body.endpoints.map((e) => [e.locality.region, [e.priority, e.load_balancing_weight.value] as [number, number]]),
  );
}

test('given cluster-b behind its gateway, when a cluster-a proxy asks for the policy hosts, then round robin weighs instances in one priority and closest prefers its locality', () => {
  const built = buildVirtualDestination({
    name: 'db',
    namespace: 'shop',
    hosts: ['db.global'],
    services: [{ name: 'db', namespace: 'shop' }],
    ports: [{ number: 7000, protocol: 'GRPC' }],
  });
  const destination = {
    ...built,
    metadata: { ...built.metadata, annotations: { [POLICY_ADDRESSES_ANNOTATION]: 'true' } },
  };
  const perCluster = new Map([
    ['cluster-a', [...db('a', ['10.1.0.1']), buildEastWestGateway({ address: '203.0.113.10' }), destination]],
    [
      'cluster-b',
      [...db('b', ['10.2.0.1', '10.2.0.2', '10.2.0.3']), buildEastWestGateway({ address: '203.0.113.20' })],
    ],
  ]);
  const inputs = new Map([...perCluster].map(([c, r]) => [c, buildTestInputSnapshot(c, r)]));
  const vips = allocateVips(new Map(), virtualDestinationKeys(inputs));
  const result = translate({ inputs, clusters: [], vips }, createIstioValidator());
  const output = result.outputs.get('cluster-a')?.resources ?? [];

  assert.deepEqual(assignment(output, 'rr.db.global'), { 'us-east': [0, 1], 'us-west': [0, 3] });
  assert.deepEqual(assignment(output, 'closest.db.global'), { 'us-east': [0, 1], 'us-west': [1, 3] });
});
