import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OutputSnapshot, Resource } from '@meshrelay/api';
import { buildEastWestGateway, buildService } from '@meshrelay/testkit';
import { createIstioValidator, translate, type OutputValidator, type TranslationInput } from '../src/index.ts';
import { reviewsDestination, twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();
const VIPS = new Map([['bookinfo/reviews-global', '10.30.0.7']]);

function inputOf(perCluster: Map<string, Resource[]>, extra: Partial<TranslationInput> = {}): TranslationInput {
  return { inputs: snapshotsOf(perCluster), clusters: [], vips: VIPS, ...extra };
}

function find(output: OutputSnapshot | undefined, kind: string, name: string): Resource {
  const r = output?.resources.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(r, `${kind} ${name} not in output`);
  return r;
}

function endpointsOf(
  serviceEntry: Resource,
): { address: string; ports: Record<string, number>; weight?: number; network: string }[] {
  return (
    serviceEntry.spec as {
      endpoints: { address: string; ports: Record<string, number>; weight?: number; network: string }[];
    }
  ).endpoints;
}

describe('translate', () => {
  it('given the same inputs in a different order, when translated, then every output has the same hash', () => {
    const mesh = twoClusterMesh();
    const reversed = new Map([...mesh].reverse().map(([name, resources]) => [name, [...resources].reverse()]));
    const first = translate(inputOf(mesh, { clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }] }), validator);
    const second = translate(
      inputOf(reversed, { clusters: [{ name: 'cluster-b' }, { name: 'cluster-a' }] }),
      validator,
    );
    assert.deepEqual([...first.outputs.keys()].sort(), ['cluster-a', 'cluster-b']);
    for (const [cluster, output] of first.outputs)
      assert.equal(second.outputs.get(cluster)?.hash, output.hash, cluster);
    assert.deepEqual(second.problems, first.problems);
  });

  it('given admitted inputs, when translated, then each output carries every admitted (cluster, input hash) pair as provenance', () => {
    const input = inputOf(twoClusterMesh());
    const result = translate(input, validator);
    const expected = [...input.inputs.values()]
      .map((s) => ({ cluster: s.cluster, inputHash: s.hash }))
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
    for (const output of result.outputs.values()) assert.deepEqual(output.provenance, expected);
  });

  it('given a registered cluster without an admitted input, when translated, then it gets no output at all', () => {
    const result = translate(
      inputOf(twoClusterMesh(), { clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }, { name: 'cluster-c' }] }),
      validator,
    );
    assert.deepEqual([...result.outputs.keys()].sort(), ['cluster-a', 'cluster-b']);
    assert.equal(result.outputs.has('cluster-c'), false);
  });

  it('given an admitted cluster with an empty input, when translated, then it still consumes the mesh-wide destinations', () => {
    const mesh = twoClusterMesh();
    mesh.set('cluster-c', []);
    const result = translate(inputOf(mesh), validator);
    const se = find(result.outputs.get('cluster-c'), 'ServiceEntry', 'reviews-global-vd');
    assert.deepEqual(
      endpointsOf(se).map((e) => e.address),
      ['203.0.113.10', '203.0.113.20'],
    );
  });

  it('given an output that fails validation in one cluster, when translated, then only its resource is left out and that resource is FAILED', () => {
    const rejectGatewayB: OutputValidator = {
      validate: (r) =>
        r.kind === 'ServiceEntry' && JSON.stringify(r).includes('203.0.113.20')
          ? ['spec.endpoints[2].address: rejected for the test']
          : validator.validate(r),
    };
    const result = translate(inputOf(twoClusterMesh()), rejectGatewayB);
    assert.deepEqual([...result.outputs.keys()], ['cluster-a', 'cluster-b']);
    assert.deepEqual(result.outputs.get('cluster-a')?.resources, []);
    assert.deepEqual(result.problems, [
      {
        cluster: 'cluster-a',
        resource: 'ServiceEntry.networking.istio.io/v1 bookinfo/reviews-global-vd',
        reason:
          'invalid output ServiceEntry.networking.istio.io/v1 bookinfo/reviews-global-vd: spec.endpoints[2].address: rejected for the test; the outputs of VirtualDestination/bookinfo/reviews-global@cluster-a are left out',
        approval: 'FAILED',
      },
    ]);
    assert.equal(result.statuses[0]?.state.approval, 'FAILED');
  });

  it('given endpoints in the consuming cluster and a remote cluster with a gateway, when translated, then local endpoints are pod IPs and remote ones go through the gateway', () => {
    const result = translate(inputOf(twoClusterMesh()), validator);
    const endpoints = endpointsOf(find(result.outputs.get('cluster-a'), 'ServiceEntry', 'reviews-global-vd'));
    assert.deepEqual(
      endpoints.map((e) => [e.address, e.ports['http-9080'], e.network, e.weight]),
      [
        ['10.1.0.1', 9080, 'cluster-a', undefined],
        ['10.1.0.2', 9080, 'cluster-a', undefined],
        ['203.0.113.20', 15443, 'cluster-b', 1],
      ],
    );
  });

  it('given a remote cluster without an east-west gateway, when translated, then its endpoints are pod IPs', () => {
    const mesh = twoClusterMesh();
    mesh.set(
      'cluster-b',
      (mesh.get('cluster-b') ?? []).filter((r) => r.metadata.name !== 'istio-eastwestgateway'),
    );
    const result = translate(inputOf(mesh), validator);
    const endpoints = endpointsOf(find(result.outputs.get('cluster-a'), 'ServiceEntry', 'reviews-global-vd'));
    assert.deepEqual(
      endpoints.map((e) => e.address),
      ['10.1.0.1', '10.1.0.2', '10.2.0.1'],
    );
  });

  it('given a gateway known only by host name, when translated, then the ServiceEntry resolves by DNS', () => {
    const mesh = twoClusterMesh();
    const b = (mesh.get('cluster-b') ?? []).filter((r) => r.metadata.name !== 'istio-eastwestgateway');
    mesh.set('cluster-b', [...b, buildEastWestGateway({ address: 'gw-b.example.com', hostname: true })]);
    const se = find(translate(inputOf(mesh), validator).outputs.get('cluster-a'), 'ServiceEntry', 'reviews-global-vd');
    assert.equal((se.spec as { resolution: string }).resolution, 'DNS');
  });

  it('given no VIP for a destination, when translated, then the ServiceEntry has no addresses', () => {
    const se = find(
      translate(inputOf(twoClusterMesh(), { vips: new Map() }), validator).outputs.get('cluster-b'),
      'ServiceEntry',
      'reviews-global-vd',
    );
    assert.equal((se.spec as { addresses?: unknown }).addresses, undefined);
  });

  it('given the same VirtualDestination in two clusters, when translated, then the first cluster wins and both are reported', () => {
    const mesh = twoClusterMesh();
    const copy = { ...reviewsDestination(), spec: { ...(reviewsDestination().spec as object), hosts: ['other.mesh'] } };
    mesh.get('cluster-b')?.push(copy);
    const result = translate(inputOf(mesh), validator);
    const se = find(result.outputs.get('cluster-b'), 'ServiceEntry', 'reviews-global-vd');
    assert.deepEqual((se.spec as { hosts: string[] }).hosts, ['reviews-global.mesh']);
    assert.deepEqual(result.problems, [
      {
        cluster: 'cluster-a',
        resource: 'VirtualDestination.networking.gloo.solo.io/v2 bookinfo/reviews-global',
        reason: 'also defined in cluster cluster-b; this definition is used and the one from cluster-b is ignored',
      },
      {
        cluster: 'cluster-b',
        resource: 'VirtualDestination.networking.gloo.solo.io/v2 bookinfo/reviews-global',
        reason: 'also defined in cluster cluster-a; the definition from cluster-a is used',
        approval: 'INVALID',
      },
    ]);
  });

  it('given a VirtualDestination selecting two Services in one cluster, when translated, then it is not translated and a problem says why', () => {
    const mesh = twoClusterMesh();
    const wide = {
      ...reviewsDestination(),
      spec: { ...(reviewsDestination().spec as object), services: [{ namespace: 'bookinfo' }] },
    };
    mesh.set('cluster-a', [
      ...(mesh.get('cluster-a') ?? []).filter((r) => r.kind !== 'VirtualDestination'),
      wide,
      buildService({ name: 'ratings', namespace: 'bookinfo', ports: [{ name: 'http', port: 9080 }] }),
    ]);
    const result = translate(inputOf(mesh), validator);
    assert.equal(
      result.outputs.get('cluster-a')?.resources.some((r) => r.kind === 'ServiceEntry'),
      false,
    );
    assert.match(
      result.problems[0]?.reason ?? '',
      /selects more than one Service in cluster cluster-a \(bookinfo\/ratings, bookinfo\/reviews\)/,
    );
  });

  it('given an invalid input resource, when translated, then it is ignored with a problem and the rest is translated', () => {
    const mesh = twoClusterMesh();
    const broken = { ...reviewsDestination('broken'), spec: { hosts: ['x.mesh'] } };
    mesh.get('cluster-a')?.push(broken);
    const result = translate(inputOf(mesh), validator);
    find(result.outputs.get('cluster-a'), 'ServiceEntry', 'reviews-global-vd');
    assert.equal(result.problems.length, 1);
    assert.match(result.problems[0]?.reason ?? '', /^invalid input resource ignored: spec\.ports: is required$/);
  });

  it('given a clock and a random source that throw, when translated, then translation never reads them', (t) => {
    const input = inputOf(twoClusterMesh());
    const expected = translate(input, validator);
    const fail = (): never => {
      throw new Error('translate must not read the clock or a random source');
    };
    t.mock.method(Date, 'now', fail);
    t.mock.method(Math, 'random', fail);
    t.mock.method(performance, 'now', fail);
    const result = translate(input, createIstioValidator());
    for (const [cluster, output] of expected.outputs) assert.equal(result.outputs.get(cluster)?.hash, output.hash);
  });

  it('given every output resource, when translated, then each carries the owner label', () => {
    const result = translate(inputOf(twoClusterMesh()), validator);
    for (const output of result.outputs.values()) {
      for (const r of output.resources) assert.equal(r.metadata.labels?.['meshrelay.io/owned-by'], 'meshrelay');
    }
  });

  it('given inputs, when translated twice, then the input snapshots are not mutated', () => {
    const input = inputOf(twoClusterMesh());
    const before = [...input.inputs.values()].map((s) => JSON.stringify(s.resources));
    translate(input, validator);
    assert.deepEqual(
      [...input.inputs.values()].map((s) => JSON.stringify(s.resources)),
      before,
    );
  });
});
