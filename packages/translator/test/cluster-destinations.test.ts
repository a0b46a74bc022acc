/**
 * A RouteTable destination on a Service in another cluster (`ref.cluster`). In the relay model a
 * cluster's Istio sees only its own endpoints under a Service host (Istio labels each with the
 * cluster it runs in), so the destination must name a host whose delivered ServiceEntry holds the
 * other cluster's endpoints; a subset on `topology.istio.io/cluster` of the local host would match
 * nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OutputSnapshot, Resource } from '@meshrelay/api';
import { buildGloo } from '@meshrelay/testkit';
import { createIstioValidator, translate } from '../src/index.ts';
import { twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();
const CLUSTER_LABEL = 'topology.istio.io/cluster';

interface Destination {
  host: string;
  subset?: string;
  port?: { number: number };
}
interface Entry {
  address: string;
  labels?: Record<string, string>;
}

function splitTable(subset?: Record<string, string>): Resource {
  const remote = {
    ref: { name: 'reviews', namespace: 'bookinfo', cluster: 'cluster-b' },
    weight: 20,
    ...(subset ? { subset } : {}),
  };
  return buildGloo('RouteTable', {
    name: 'reviews-split',
    namespace: 'bookinfo',
    spec: {
      hosts: ['reviews.bookinfo.svc.cluster.local'],
      http: [
        {
          name: 'split',
          forwardTo: { destinations: [{ ref: { name: 'reviews', namespace: 'bookinfo' }, weight: 80 }, remote] },
        },
      ],
    },
  });
}

function meshWith(table: Resource, gateways = true): Map<string, Resource[]> {
  const mesh = twoClusterMesh();
  if (!gateways)
    for (const [name, resources] of mesh)
      mesh.set(
        name,
        resources.filter((r) => r.kind !== 'Gateway' && !r.metadata.name.includes('eastwest')),
      );
  mesh.get('cluster-a')?.push(table);
  return mesh;
}

function routeOf(output: OutputSnapshot | undefined): Destination[] {
  const vs = output?.resources.find((r) => r.kind === 'VirtualService' && r.metadata.name === 'reviews-split-rt');
  assert.ok(vs, 'VirtualService reviews-split-rt not in output');
  const http = (vs.spec as { http: { route: { destination: Destination }[] }[] }).http;
  return (http[0]?.route ?? []).map((r) => r.destination);
}

function entryFor(output: OutputSnapshot | undefined, host: string): Entry[] {
  const se = output?.resources.find(
    (r) => r.kind === 'ServiceEntry' && (r.spec as { hosts: string[] }).hosts.includes(host),
  );
  assert.ok(se, `no ServiceEntry in the output holds host ${host}`);
  return (se.spec as { endpoints: Entry[] }).endpoints;
}

function subsetsOf(
  output: OutputSnapshot | undefined,
  host: string,
): { name: string; labels: Record<string, string> }[] {
  return (output?.resources ?? [])
    .filter((r) => r.kind === 'DestinationRule' && (r.spec as { host: string }).host === host)
    .flatMap((r) => (r.spec as { subsets?: { name: string; labels: Record<string, string> }[] }).subsets ?? []);
}

describe('a destination on a Service in another cluster', () => {
  it('given a split to cluster-b reviews, when translated for cluster-a, then that share goes to a host delivered with cluster-b endpoints only', () => {
    const result = translate({ inputs: snapshotsOf(meshWith(splitTable())), clusters: [], vips: new Map() }, validator);
    const [local, remote] = routeOf(result.outputs.get('cluster-a'));
    assert.equal(local?.host, 'reviews.bookinfo.svc.cluster.local');
    assert.ok(remote, 'the route has no second destination');
    assert.notEqual(
      remote.host,
      'reviews.bookinfo.svc.cluster.local',
      'the cluster-b share must not target the local Service host',
    );
    assert.equal(remote.subset, undefined);
    const endpoints = entryFor(result.outputs.get('cluster-a'), remote.host);
    assert.deepEqual(
      endpoints.map((e) => e.address),
      ['203.0.113.20'],
      'cluster-b is reached through its east-west gateway',
    );
    for (const e of endpoints) assert.equal(e.labels?.[CLUSTER_LABEL], 'cluster-b');
  });

  it('given no east-west gateways, when translated, then the delivered host holds the cluster-b pod addresses', () => {
    const result = translate(
      { inputs: snapshotsOf(meshWith(splitTable(), false)), clusters: [], vips: new Map() },
      validator,
    );
    const [, remote] = routeOf(result.outputs.get('cluster-a'));
    assert.deepEqual(
      entryFor(result.outputs.get('cluster-a'), remote?.host ?? '').map((e) => e.address),
      ['10.2.0.1'],
    );
  });

  it('given a subset on the remote destination, when translated, then the subset is on the delivered host and selects by the given labels only', () => {
    const result = translate(
      { inputs: snapshotsOf(meshWith(splitTable({ app: 'reviews' }))), clusters: [], vips: new Map() },
      validator,
    );
    const output = result.outputs.get('cluster-a');
    const [, remote] = routeOf(output);
    assert.ok(remote?.subset, 'the remote destination lost its subset');
    assert.deepEqual(subsetsOf(output, remote.host), [{ name: remote.subset, labels: { app: 'reviews' } }]);
    const endpoints = entryFor(output, remote.host);
    assert.ok(
      endpoints.length > 0 && endpoints.every((e) => e.labels?.['app'] === 'reviews'),
      'gateway endpoints keep the label the subset selects by',
    );
  });

  it('given the destination seen from cluster-b itself, when translated, then cluster-b routes to its local Service host', () => {
    const result = translate({ inputs: snapshotsOf(meshWith(splitTable())), clusters: [], vips: new Map() }, validator);
    const statuses = result.statuses
      .filter((s) => s.state.approval !== 'ACCEPTED')
      .map((s) => `${s.source}: ${s.state.message}`);
    assert.deepEqual(statuses, [], 'every resource is ACCEPTED: outputs are schema-valid and nothing is reported');
    const [, remote] = routeOf(result.outputs.get('cluster-b'));
    assert.equal(remote?.host, 'reviews.bookinfo.svc.cluster.local');
  });
});
