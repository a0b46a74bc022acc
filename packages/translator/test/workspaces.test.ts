import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildGloo } from '@meshrelay/testkit';
import { createIstioValidator, translate, type TranslationInput } from '../src/index.ts';
import { reviewsDestination, twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();

function workspace(name: string, cluster: string, namespaces: string[]): Resource {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: 'gloo-mesh' },
    spec: { workloadClusters: [{ name: cluster, namespaces: namespaces.map((n) => ({ name: n })) }] },
  };
}

const WORKSPACES = [workspace('team-a', 'cluster-a', ['bookinfo']), workspace('team-b', 'cluster-b', ['*'])];

const hijack = buildGloo('RouteTable', {
  name: 'hijack',
  namespace: 'bookinfo',
  spec: { hosts: ['reviews.bookinfo.svc.cluster.local'], http: [{ directResponse: { status: 503 } }] },
});

function inputOf(perCluster: Map<string, Resource[]>, extra: Partial<TranslationInput> = {}): TranslationInput {
  return {
    inputs: snapshotsOf(perCluster),
    clusters: [],
    vips: new Map([['bookinfo/reviews-global', '10.30.0.7']]),
    ...extra,
  };
}

describe('workspaces', () => {
  it("given workspaces, when cluster-b adds a RouteTable in a namespace that team-a owns in cluster-a, then cluster-a's output does not change", () => {
    const before = translate(inputOf(twoClusterMesh(), { workspaces: WORKSPACES }), validator);
    const mesh = twoClusterMesh();
    mesh.get('cluster-b')?.push(hijack);
    const after = translate(inputOf(mesh, { workspaces: WORKSPACES }), validator);
    assert.equal(after.outputs.get('cluster-a')?.hash, before.outputs.get('cluster-a')?.hash);
    assert.ok(after.outputs.get('cluster-b')?.resources.some((r) => r.kind === 'VirtualService'));
  });

  it('given no workspace, when cluster-b adds a RouteTable, then every cluster gets it (one implicit workspace)', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-b')?.push(hijack);
    const result = translate(inputOf(mesh), validator);
    assert.ok(result.outputs.get('cluster-a')?.resources.some((r) => r.kind === 'VirtualService'));
  });

  it('given workspaces, when a resource lives in a namespace no workspace owns, then it is INVALID and produces nothing', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push({ ...hijack, metadata: { ...hijack.metadata, namespace: 'elsewhere' } });
    const result = translate(inputOf(mesh, { workspaces: WORKSPACES }), validator);
    const status = result.statuses.find((s) => s.name === 'hijack');
    assert.equal(status?.state.approval, 'INVALID');
    assert.deepEqual(status?.outputs, []);
  });

  it('given a policy whose selector names a workspace, when translated, then only destinations of that workspace are selected', () => {
    const withSelector = (workspaceName: string): Map<string, Resource[]> => {
      const mesh = twoClusterMesh();
      const spec = {
        applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { workspace: workspaceName } }],
        config: { consecutiveErrors: 2 },
      };
      mesh.get('cluster-a')?.push(buildGloo('OutlierDetectionPolicy', { name: 'strict', namespace: 'bookinfo', spec }));
      return mesh;
    };
    const ruleIn = (mesh: Map<string, Resource[]>): string => {
      const result = translate(inputOf(mesh, { workspaces: WORKSPACES }), validator);
      return JSON.stringify(result.outputs.get('cluster-a')?.resources.find((r) => r.kind === 'DestinationRule')?.spec);
    };
    assert.equal(ruleIn(withSelector('team-b')).includes('outlierDetection'), false);
    assert.equal(ruleIn(withSelector('team-a')).includes('"consecutive5xxErrors":2'), true);
  });

  it("given an invalid AccessPolicy of team-b naming a namespace team-a owns in cluster-a, when it fails closed, then its deny lands only in team-b's clusters", () => {
    const mesh = twoClusterMesh();
    const broken = buildGloo('AccessPolicy', {
      name: 'broken',
      namespace: 'web',
      spec: {
        applyToWorkloads: [{ selector: { namespace: 'bookinfo', labels: { app: 'reviews' } } }],
        config: { authz: { allowedHosts: ['x'] } },
      },
    });
    mesh.get('cluster-b')?.push(broken);
    const result = translate(inputOf(mesh, { workspaces: WORKSPACES }), validator);
    assert.equal(
      result.outputs.get('cluster-a')?.resources.some((r) => r.kind === 'AuthorizationPolicy'),
      false,
    );
    assert.ok(
      result.outputs
        .get('cluster-b')
        ?.resources.some((r) => r.kind === 'AuthorizationPolicy' && r.metadata.namespace === 'bookinfo'),
    );
  });

  it('given an export filtered by resource name, when translated, then only that VirtualDestination reaches the importing cluster', () => {
    const settings = (name: string, namespace: string, spec: Record<string, unknown>): Resource => ({
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'WorkspaceSettings',
      metadata: { name, namespace },
      spec,
    });
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(
      reviewsDestination('reviews-private'),
      settings('team-a', 'bookinfo', {
        exportTo: [
          { workspaces: [{ name: 'team-b' }], resources: [{ kind: 'VIRTUAL_DESTINATION', name: 'reviews-global' }] },
        ],
      }),
    );
    mesh.get('cluster-b')?.push(settings('team-b', 'bookinfo', { importFrom: [{ workspaces: [{ name: 'team-a' }] }] }));
    const result = translate(inputOf(mesh, { workspaces: WORKSPACES }), validator);
    const entries = (result.outputs.get('cluster-b')?.resources ?? [])
      .filter((r) => r.kind === 'ServiceEntry')
      .map((r) => r.metadata.name);
    assert.deepEqual(entries, ['reviews-global-vd']);
    const inA = (result.outputs.get('cluster-a')?.resources ?? [])
      .filter((r) => r.kind === 'ServiceEntry')
      .map((r) => r.metadata.name);
    assert.deepEqual(inA, ['reviews-global-vd', 'reviews-private-vd']);
  });
});
