import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SOURCES_ANNOTATION, type Resource } from '@meshrelay/api';
import { buildGloo } from '@meshrelay/testkit';
import { createIstioValidator, translate, type TranslationInput } from '../src/index.ts';
import { reviewsIn, twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();
const VIPS = new Map([['bookinfo/reviews-global', '10.30.0.7']]);

function inputOf(perCluster: Map<string, Resource[]>, extra: Partial<TranslationInput> = {}): TranslationInput {
  return { inputs: snapshotsOf(perCluster), clusters: [], vips: VIPS, ...extra };
}

function accessPolicy(name: string, namespace: string, spec: Record<string, unknown>): Resource {
  return buildGloo('AccessPolicy', { name, namespace, spec });
}

const badNamespacePolicy = accessPolicy('odd', 'bookinfo', {
  applyToWorkloads: [{ selector: { namespace: 'Not A Namespace', labels: { app: 'reviews' } } }],
  config: { authz: { allowedClients: [{ serviceAccountSelector: { namespace: 'bookinfo', name: 'productpage' } }] } },
});

const reviewsPolicy = accessPolicy('reviews-only', 'bookinfo', {
  applyToWorkloads: [{ selector: { namespace: 'bookinfo', labels: { app: 'reviews' } } }],
  config: { authz: { allowedClients: [{ serviceAccountSelector: { namespace: 'bookinfo', name: 'productpage' } }] } },
});

function serviceEntryAddresses(result: ReturnType<typeof translate>, cluster: string): string[] {
  const se = result.outputs.get(cluster)?.resources.find((r) => r.kind === 'ServiceEntry');
  return ((se?.spec as { endpoints?: { address: string }[] } | undefined)?.endpoints ?? []).map((e) => e.address);
}

describe('per-resource statuses and failure isolation', () => {
  it('given an AccessPolicy in cluster-b whose selector.namespace is any string, when cluster-a endpoints change, then cluster-a output still ships the change', () => {
    const before = twoClusterMesh();
    before.get('cluster-b')?.push(badNamespacePolicy);
    const after = twoClusterMesh();
    after.set('cluster-a', [
      ...reviewsIn('a', ['10.1.0.1', '10.1.0.9'], 'us-east-1a'),
      ...(after.get('cluster-a') ?? []).filter((r) => !['Service', 'EndpointSlice', 'Pod', 'Node'].includes(r.kind)),
    ]);
    after.get('cluster-b')?.push(badNamespacePolicy);
    const first = translate(inputOf(before), validator);
    const second = translate(inputOf(after), validator);
    assert.deepEqual(serviceEntryAddresses(first, 'cluster-a'), ['10.1.0.1', '10.1.0.2', '203.0.113.20']);
    assert.deepEqual(serviceEntryAddresses(second, 'cluster-a'), ['10.1.0.1', '10.1.0.9', '203.0.113.20']);
    assert.notEqual(second.outputs.get('cluster-a')?.hash, first.outputs.get('cluster-a')?.hash);
    const status = second.statuses.find((s) => s.name === 'odd');
    assert.equal(status?.state.approval, 'FAILED');
    assert.match(status?.state.message ?? '', /metadata\.namespace: must be a DNS-1123 label/);
    assert.equal(second.statuses.find((s) => s.kind === 'VirtualDestination')?.state.approval, 'ACCEPTED');
  });

  it('given a valid mesh, when translated, then every Gloo resource is ACCEPTED and lists the outputs it produced', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(reviewsPolicy);
    const result = translate(inputOf(mesh), validator);
    assert.deepEqual(
      result.statuses.map((s) => [
        s.source,
        s.state.approval,
        s.outputs.map((o) => `${o.cluster} ${o.kind} ${o.name}`),
      ]),
      [
        [
          'AccessPolicy/bookinfo/reviews-only@cluster-a',
          'ACCEPTED',
          ['cluster-a AuthorizationPolicy reviews-only-w0-ap', 'cluster-b AuthorizationPolicy reviews-only-w0-ap'],
        ],
        [
          'VirtualDestination/bookinfo/reviews-global@cluster-a',
          'ACCEPTED',
          [
            'cluster-a DestinationRule reviews-global-vd',
            'cluster-a ServiceEntry reviews-global-vd',
            'cluster-b DestinationRule reviews-global-vd',
            'cluster-b ServiceEntry reviews-global-vd',
          ],
        ],
      ],
    );
    assert.deepEqual(Object.keys(result.statuses[0]?.clusters ?? {}), ['cluster-a', 'cluster-b']);
  });

  it('given outputs, when translated, then each names its Gloo sources in the sources annotation', () => {
    const result = translate(inputOf(twoClusterMesh()), validator);
    for (const output of result.outputs.values()) {
      for (const r of output.resources)
        assert.equal(
          r.metadata.annotations?.[SOURCES_ANNOTATION],
          'VirtualDestination/bookinfo/reviews-global@cluster-a',
        );
    }
  });

  it('given a Gloo resource with a generation, when translated, then its status reports it as observedGeneration', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push({ ...reviewsPolicy, metadata: { ...reviewsPolicy.metadata, generation: 7 } });
    const result = translate(inputOf(mesh), validator);
    assert.equal(result.statuses.find((s) => s.kind === 'AccessPolicy')?.state.observedGeneration, 7);
  });

  it('given an AccessPolicy that fails after a good translation, when translated with the previous security outputs, then its last good outputs stay', () => {
    const good = twoClusterMesh();
    good.get('cluster-a')?.push(reviewsPolicy);
    const first = translate(inputOf(good), validator);
    const broken = {
      ...reviewsPolicy,
      spec: { ...(reviewsPolicy.spec as object), applyToWorkloads: [{ selector: { namespace: 'Bad NS' } }] },
    };
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(broken);
    const second = translate(inputOf(mesh, { previousSecurityOutputs: first.securityOutputs }), validator);
    const policies = (c: typeof first, cluster: string): Resource[] =>
      c.outputs.get(cluster)?.resources.filter((r) => r.kind === 'AuthorizationPolicy') ?? [];
    assert.deepEqual(policies(second, 'cluster-b'), policies(first, 'cluster-b'));
    assert.equal(policies(second, 'cluster-b').length, 1);
    assert.equal(second.statuses.find((s) => s.kind === 'AccessPolicy')?.state.approval, 'FAILED');
    assert.deepEqual(second.securityOutputs, first.securityOutputs);
  });

  it('given an AccessPolicy that never translated, when it fails, then the workloads it selects get an allow-nothing policy', () => {
    const mesh = twoClusterMesh();
    const broken = {
      ...reviewsPolicy,
      spec: {
        ...(reviewsPolicy.spec as object),
        config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'x', namespace: 'Bad NS' } }] } },
      },
    };
    mesh.get('cluster-a')?.push(broken);
    const failing = {
      validate: (r: Resource) =>
        r.kind === 'AuthorizationPolicy' && JSON.stringify(r).includes('Bad NS')
          ? ['rejected for the test']
          : validator.validate(r),
    };
    const result = translate(inputOf(mesh), failing);
    const ap = result.outputs.get('cluster-b')?.resources.find((r) => r.kind === 'AuthorizationPolicy');
    assert.deepEqual(ap?.spec, { selector: { matchLabels: { app: 'reviews' } } });
    assert.equal(ap?.metadata.name, 'reviews-only-w0-ap');
    assert.equal(result.statuses.find((s) => s.kind === 'AccessPolicy')?.state.approval, 'FAILED');
    assert.equal(result.securityOutputs.has('AccessPolicy/bookinfo/reviews-only@cluster-a'), false);
  });
});

describe('security resources that cannot be translated', () => {
  it('given an AccessPolicy that becomes INVALID after a good translation, when translated with the previous security outputs, then its last good outputs stay', () => {
    const good = twoClusterMesh();
    good.get('cluster-a')?.push(reviewsPolicy);
    const first = translate(inputOf(good), validator);
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push({
      ...reviewsPolicy,
      spec: { ...(reviewsPolicy.spec as object), config: { authz: {}, enforcementLayers: { cni: true } } },
    });
    const second = translate(inputOf(mesh, { previousSecurityOutputs: first.securityOutputs }), validator);
    const policiesIn = (r: typeof first): unknown[] =>
      r.outputs.get('cluster-a')?.resources.filter((x) => x.kind === 'AuthorizationPolicy') ?? [];
    assert.deepEqual(policiesIn(second), policiesIn(first));
    const status = second.statuses.find((s) => s.kind === 'AccessPolicy');
    assert.equal(status?.state.approval, 'INVALID');
    assert.match(status?.state.message ?? '', /spec\.config\.enforcementLayers is not supported/);
  });

  it('given an AccessPolicy with an unknown field that never translated, when translated, then the workloads it selects deny every request', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push({
      ...reviewsPolicy,
      spec: { ...(reviewsPolicy.spec as object), config: { authz: { allowedHosts: ['x'] } } },
    });
    const result = translate(inputOf(mesh), validator);
    const ap = result.outputs.get('cluster-b')?.resources.find((r) => r.kind === 'AuthorizationPolicy');
    assert.deepEqual(ap?.spec, { selector: { matchLabels: { app: 'reviews' } } });
    const status = result.statuses.find((s) => s.kind === 'AccessPolicy');
    assert.equal(status?.state.approval, 'INVALID');
    assert.match(status?.state.message ?? '', /spec\.config\.authz\.allowedHosts: unknown field/);
  });

  it('given a RouteTable with a field Meshrelay does not implement, when translated, then it is WARNING naming the field and its VirtualService still goes out', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(
      buildGloo('RouteTable', {
        name: 'reviews',
        namespace: 'bookinfo',
        spec: {
          hosts: ['reviews.example.com'],
          portalMetadata: { title: 'x' },
          http: [{ forwardTo: { destinations: [{ ref: { name: 'reviews' }, port: { number: 9080 } }] } }],
        },
      }),
    );
    const result = translate(inputOf(mesh), validator);
    const status = result.statuses.find((s) => s.kind === 'RouteTable');
    assert.equal(status?.state.approval, 'WARNING');
    assert.equal(status?.state.message, 'spec.portalMetadata is not supported by Meshrelay; ignored');
    assert.ok(result.outputs.get('cluster-b')?.resources.some((r) => r.kind === 'VirtualService'));
  });
});
