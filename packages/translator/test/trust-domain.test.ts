import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildGloo, buildService } from '@meshrelay/testkit';
import { createIstioValidator, translate, type ClusterInfo } from '../src/index.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();

const policy = buildGloo('AccessPolicy', {
  name: 'reviews',
  namespace: 'bookinfo',
  spec: {
    applyToDestinations: [{ selector: { name: 'reviews' } }],
    config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'productpage', namespace: 'bookinfo' } }] } },
  },
});
const service = buildService({
  name: 'reviews',
  namespace: 'bookinfo',
  ports: [{ name: 'http', port: 9080 }],
  selector: { app: 'reviews' },
});

function meshConfig(trustDomain: string): Resource {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'istio', namespace: 'istio-system' },
    data: { mesh: `trustDomain: ${trustDomain}\n` },
  };
}

function principals(perCluster: Map<string, Resource[]>, clusters: ClusterInfo[] = []): unknown {
  const result = translate({ inputs: snapshotsOf(perCluster), clusters, vips: new Map() }, validator);
  const ap = result.outputs.get('east')?.resources.find((r) => r.kind === 'AuthorizationPolicy');
  return (ap?.spec as { rules: { from: { source: { principals: string[] } }[] }[] }).rules[0]?.from[0]?.source
    .principals;
}

describe('trust domains in principals', () => {
  it('given no trust domain anywhere, when translated, then principals use Istio default cluster.local, not the cluster name', () => {
    assert.deepEqual(principals(new Map([['east', [service, policy]]])), ['cluster.local/ns/bookinfo/sa/productpage']);
  });

  it('given the cluster mesh config sets a trust domain, when translated, then principals use it', () => {
    assert.deepEqual(principals(new Map([['east', [service, policy, meshConfig('east.example')]]])), [
      'east.example/ns/bookinfo/sa/productpage',
    ]);
  });

  it('given the registry sets a trust domain, when translated, then it wins over the mesh config', () => {
    const perCluster = new Map([['east', [service, policy, meshConfig('east.example')]]]);
    assert.deepEqual(principals(perCluster, [{ name: 'east', trustDomain: 'registry.example' }]), [
      'registry.example/ns/bookinfo/sa/productpage',
    ]);
  });
});
