// Trust domains end to end: a real meshrelay-server, real redis-server and three
// meshrelay-agent processes (file provider). cluster-a's Istio mesh config sets its trust
// domain; cluster-c is registered with one of its own, which wins over its mesh config.
// An AccessPolicy in cluster-b allows a service account of each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SOURCES_ANNOTATION, type Resource } from '@meshrelay/api';
import { Mesh, makeClusterC, type OutputOnDisk } from './mesh.ts';

function meshConfigYaml(trustDomain: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: { name: istio, namespace: istio-system }
data:
  mesh: |
    trustDomain: ${trustDomain}
`;
}

const CALLERS_POLICY = `apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata: { name: reviews-callers, namespace: bookinfo }
spec:
  applyToDestinations:
    - selector: { name: reviews, namespace: bookinfo }
  config:
    authz:
      allowedClients:
        - serviceAccountSelector: { name: bookinfo-productpage, namespace: bookinfo, cluster: cluster-a }
        - serviceAccountSelector: { name: bookinfo-reviews, namespace: bookinfo, cluster: cluster-c }
`;

const SOURCE = 'AccessPolicy/bookinfo/reviews-callers@cluster-b';

function callersPolicy(output: OutputOnDisk): Resource | undefined {
  return output.resources.find(
    (r) => r.kind === 'AuthorizationPolicy' && r.metadata.annotations?.[SOURCES_ANNOTATION] === SOURCE,
  );
}

function principalsOf(policy: Resource | undefined): string[] {
  const spec = policy?.spec as { rules?: { from?: { source?: { principals?: string[] } }[] }[] } | undefined;
  return (spec?.rules ?? []).flatMap((rule) => (rule.from ?? []).flatMap((f) => f.source?.principals ?? []));
}

test('given cluster-a whose Istio mesh config sets trustDomain a.example and cluster-c registered with trustDomain c.example', async (t) => {
  const mesh = await Mesh.start(t);
  await mesh.startServer();
  await mesh.register('cluster-a');
  await mesh.register('cluster-b');
  await mesh.register('cluster-c', { trustDomain: 'c.example' });
  await mesh.startAgent('cluster-a', { from: 'cluster-a' });
  mesh.writeManifest('cluster-a', 'istio-mesh-config.yaml', meshConfigYaml('a.example'));
  await mesh.startAgent('cluster-b', { from: 'cluster-b' });
  mesh.writeManifest('cluster-b', 'reviews-callers.yaml', CALLERS_POLICY);
  await mesh.startAgent('cluster-c', { from: makeClusterC(mesh.dir) });
  mesh.writeManifest('cluster-c', 'istio-mesh-config.yaml', meshConfigYaml('mesh-config.example'));

  const out = await mesh.waitForOutput(
    'cluster-b',
    (o) => o.provenance.length === 3 && principalsOf(callersPolicy(o)).length === 2,
    30_000,
    "cluster-b's AuthorizationPolicy allowing clients of cluster-a and cluster-c",
  );
  const principals = principalsOf(callersPolicy(out)).sort();

  await t.test(
    "when cluster-b's AccessPolicy allows a service account of cluster-a, then its principal is in a.example, from cluster-a's mesh config",
    () => {
      assert.equal(principals[0], 'a.example/ns/bookinfo/sa/bookinfo-productpage');
    },
  );

  await t.test(
    "when cluster-b's AccessPolicy allows a service account of cluster-c, then its principal is in the registered c.example, not the one in cluster-c's mesh config",
    () => {
      assert.equal(principals[1], 'c.example/ns/bookinfo/sa/bookinfo-reviews');
    },
  );
});
