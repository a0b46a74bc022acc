// The kubernetes provider reads the trust domain from Istio's mesh config ConfigMap, against the
// fake kube-apiserver (a test double from @meshrelay/testkit): changes are picked up without a
// restart, and a malformed mesh config keeps the last good trust domain and is reported.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import type { InputSnapshot, Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { KubernetesDiscoveryProvider, type KubernetesProviderOptions } from '../src/discovery/kubernetes-provider.ts';
import { captureLogger } from './support/fixtures.ts';
import { service, startFakeKube } from './support/kube.ts';

const TIMEOUT = { timeout: 60_000 };

async function startProvider(t: TestContext, kubeConfig: KubeConfig, options: Partial<KubernetesProviderOptions> = {}) {
  const { logger, lines } = captureLogger();
  const provider = new KubernetesDiscoveryProvider({
    cluster: 'cluster-a',
    kubeConfig,
    validate: validateInputResource,
    logger,
    debounceMs: 20,
    backoff: { baseMs: 20, capMs: 100 },
    epoch: 'epoch-1',
    ...options,
  });
  const published: InputSnapshot[] = [];
  provider.onSnapshot((s) => published.push(s));
  t.after(() => provider.stop());
  await provider.start();
  return { provider, published, lines };
}

function meshConfigMap(mesh: string, namespace = 'istio-system', name = 'istio') {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data: { mesh, meshNetworks: 'networks: {}' },
  };
}

/** The trust domain the snapshot carries to the server: its mesh config ConfigMap's. */
function snapshotTrustDomain(snapshot: InputSnapshot | undefined): string | undefined {
  const configMap = snapshot?.resources.find((r) => r.kind === 'ConfigMap') as
    (Resource & { data?: { mesh?: string } }) | undefined;
  return /trustDomain: (\S+)/.exec(configMap?.data?.mesh ?? '')?.[1];
}

test(
  "given Istio's mesh config with a trust domain, when it changes, is broken, fixed and deleted, then the snapshot follows without a restart and keeps the last good one while broken",
  TIMEOUT,
  async (t) => {
    const { server, kubeConfig } = await startFakeKube(t);
    server.put(service('reviews'));
    server.put(
      meshConfigMap('defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\ntrustDomain: a.example\n'),
    );
    server.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio-sidecar-injector', namespace: 'istio-system' },
      data: { config: 'policy: enabled' },
    });
    const { provider } = await startProvider(t, kubeConfig);
    assert.equal(provider.trustDomain, 'a.example');
    const configMaps = provider.current?.resources.filter((r) => r.kind === 'ConfigMap');
    assert.deepEqual(
      configMaps,
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'istio', namespace: 'istio-system' },
          data: { mesh: 'trustDomain: a.example\n' },
        },
      ],
      'only the trust domain of the mesh config is carried',
    );

    server.put(meshConfigMap('trustDomain: b.example\n'));
    await waitFor(() => snapshotTrustDomain(provider.current) === 'b.example', {
      message: 'the changed trust domain in the snapshot',
    });
    assert.equal(provider.trustDomain, 'b.example');

    const hash = provider.current?.hash;
    server.put(meshConfigMap('trustDomain: [b.example\n'));
    await waitFor(() => provider.problems.some((p) => p.object?.kind === 'ConfigMap'), {
      message: 'the malformed mesh config reported',
    });
    const problem = provider.problems.find((p) => p.object?.kind === 'ConfigMap');
    assert.deepEqual(problem?.object, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'istio-system',
      name: 'istio',
    });
    assert.equal(problem?.path, 'data.mesh');
    assert.match(problem?.message ?? '', /not valid YAML.*; the last good trust domain b\.example is kept$/);
    assert.equal(provider.current?.hash, hash, 'the snapshot still carries b.example');
    assert.equal(provider.trustDomain, 'b.example');

    server.put(meshConfigMap('trustDomain: 42\n'));
    await waitFor(() => /must be a DNS name, not 42/.test(provider.problems.map((p) => p.message).join()), {
      message: 'a trust domain that is no name reported',
    });

    server.put(meshConfigMap('trustDomain: c.example\n'));
    await waitFor(() => snapshotTrustDomain(provider.current) === 'c.example' && provider.problems.length === 0, {
      message: 'the fixed mesh config read',
    });

    server.remove('ConfigMap', 'istio', 'istio-system');
    await waitFor(() => provider.current?.resources.every((r) => r.kind !== 'ConfigMap') === true, {
      message: 'no mesh config once it is deleted',
    });
    assert.equal(provider.trustDomain, undefined);
  },
);

test(
  'given --istio-namespace istio-config, when the provider runs, then the mesh config there is read and one in istio-system is not',
  TIMEOUT,
  async (t) => {
    const { server, kubeConfig } = await startFakeKube(t);
    server.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'istio-config' } });
    server.put(meshConfigMap('trustDomain: ignored.example\n'));
    server.put(meshConfigMap('trustDomain: custom.example\n', 'istio-config'));
    const { provider } = await startProvider(t, kubeConfig, {
      istioNamespace: 'istio-config',
      namespaces: ['bookinfo'],
    });
    assert.equal(snapshotTrustDomain(provider.current), 'custom.example');
    assert.equal(provider.trustDomain, 'custom.example');
  },
);

test(
  "given a mesh config that sets no trust domain, when the provider starts, then the snapshot carries none and Istio's default applies",
  TIMEOUT,
  async (t) => {
    const { server, kubeConfig } = await startFakeKube(t);
    server.put(meshConfigMap('accessLogFile: /dev/stdout\n'));
    const { provider } = await startProvider(t, kubeConfig);
    assert.equal(provider.trustDomain, undefined);
    assert.ok(provider.current?.resources.every((r) => r.kind !== 'ConfigMap'));
    assert.deepEqual(provider.problems, []);
  },
);
