// Management servers started with `--registry kubernetes` against the fake kube-apiserver (a
// test double of kube-apiserver from @meshrelay/testkit).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { X509Certificate } from 'node:crypto';
import { ensureRelayCa } from '@meshrelay/certs';
import { KubernetesSecretCaStore, KubernetesVipAllocations, registryApis } from '@meshrelay/registry';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import { parseServerConfig } from '../src/config.ts';
import {
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';
import {
  NS,
  clusterCr,
  kubeConfigFile,
  kubeConfigOf,
  startFakeKube,
  storedWarmCondition,
} from '../../registry/test/kube-harness.ts';

function kubeServer(
  t: TestContext,
  fake: FakeKubeApiServer,
  replica: string,
  flags: string[] = [],
): Promise<TestServer> {
  return startTestServer(t, [
    '--registry',
    'kubernetes',
    '--kubeconfig',
    kubeConfigFile(t, fake),
    '--replica-name',
    replica,
    ...flags,
  ]);
}

function decodedSecret(fake: FakeKubeApiServer, name: string, key: string): string | undefined {
  const data = fake.get('Secret', name, NS)?.['data'] as Record<string, string> | undefined;
  return data?.[key] === undefined ? undefined : Buffer.from(data[key], 'base64').toString('utf8');
}

test('given two management servers started at the same moment, when both create the relay CA, then they end with the same one (5 runs)', async (t) => {
  for (let run = 0; run < 5; run++) {
    const fake = await startFakeKube(t);
    const [a, b] = await Promise.all([kubeServer(t, fake, `a-${run}`), kubeServer(t, fake, `b-${run}`)]);
    assert.equal(a.ca.certPem, b.ca.certPem, `run ${run}: the replicas signed under different roots`);
    assert.equal(decodedSecret(fake, 'relay-root-ca', 'tls.crt'), a.ca.certPem);
    assert.equal(fake.get('Secret', 'relay-root-ca', NS)?.['type'], 'kubernetes.io/tls');
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('given CA stores racing on one Secret, when each creates a CA, then every caller gets the winner (5 runs)', async (t) => {
  for (let run = 0; run < 5; run++) {
    const fake = await startFakeKube(t);
    const stores = [0, 1, 2].map(() => new KubernetesSecretCaStore(registryApis(kubeConfigOf(fake)), NS));
    const bundles = await Promise.all(
      stores.map((s) => ensureRelayCa(s, { commonName: `race ${run}`, now: new Date() })),
    );
    assert.equal(new Set(bundles.map((b) => b.certPem)).size, 1);
    assert.equal(new Set(bundles.map((b) => b.keyPem)).size, 1);
    assert.ok(new X509Certificate(bundles[0]!.certPem).ca);
  }
});

test('given a corrupt relay CA Secret, when a store loads it, then it refuses instead of replacing the trust root', async (t) => {
  const fake = await startFakeKube(t);
  fake.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'relay-root-ca', namespace: NS },
    data: { 'tls.crt': Buffer.from('nope').toString('base64') },
  });
  const store = new KubernetesSecretCaStore(registryApis(kubeConfigOf(fake)), NS);
  await assert.rejects(ensureRelayCa(store, { commonName: 'x', now: new Date() }), /MESHRELAY_ERR_CERTIFICATE|tls.key/);
});

test('given a kubernetes-mode server, when an agent pushes its first snapshot, then ClusterWarm=True is stored in the CR status', async (t) => {
  const fake = await startFakeKube(t);
  const server = await kubeServer(t, fake, 'r0');
  const identity = await registerCluster(server, 'east');
  const stream = openPush(mtlsClient(t, server, identity));
  pushSnapshot(stream, 'east', 1, [service('x')]);
  await next(stream, (m) => m.ack ?? undefined);
  stream.end();
  await waitFor(() => storedWarmCondition(fake, 'east')?.status === 'True', {
    message: 'ClusterWarm never reached the CR status',
  });
  assert.equal(storedWarmCondition(fake, 'east')?.reason, 'FirstSnapshotReceived');
});

test('given safe mode held by a warm cluster, when an operator sets skipWarming on its CR, then the gate opens without a restart', async (t) => {
  const fake = await startFakeKube(t);
  const cr = fake.put(clusterCr('east', { skipWarming: false }));
  fake.put({
    ...cr,
    status: {
      conditions: [
        {
          type: 'ClusterWarm',
          status: 'True',
          reason: 'FirstSnapshotReceived',
          message: 'before',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  });
  const server = await kubeServer(t, fake, 'r0', ['--safe-mode', 'true']);
  await waitFor(() => server.loop.status().gate.missing.includes('east'), {
    message: 'the gate never waited for east',
  });
  assert.equal(server.loop.status().gate.state, 'held');
  const live = fake.get('KubernetesCluster', 'east', NS)!;
  fake.put({ ...live, spec: { skipWarming: true } });
  await waitFor(() => server.loop.status().gate.state === 'open', {
    message: `gate: ${JSON.stringify(server.loop.status().gate)}`,
  });
});

test('given safe mode held by a warm cluster, when its CR is deleted, then the cluster is deregistered and the gate opens', async (t) => {
  const fake = await startFakeKube(t);
  const cr = fake.put(clusterCr('east'));
  fake.put({
    ...cr,
    status: {
      conditions: [
        {
          type: 'ClusterWarm',
          status: 'True',
          reason: 'FirstSnapshotReceived',
          message: 'before',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  });
  const server = await kubeServer(t, fake, 'r0', ['--safe-mode', 'true']);
  await waitFor(() => server.loop.status().gate.missing.includes('east'), {
    message: 'the gate never waited for east',
  });
  fake.remove('KubernetesCluster', 'east', NS);
  await waitFor(() => server.loop.status().gate.state === 'open' && server.registry.get('east') === undefined);
});

test('given two VIP stores on one ConfigMap, when they allocate different keys at once, then no address is handed out twice', async (t) => {
  const fake = await startFakeKube(t);
  const [a, b] = [0, 1].map(() => new KubernetesVipAllocations(registryApis(kubeConfigOf(fake)), NS, '10.30.0.0/16'));
  const registered = new Set(['x', 'y']);
  const [fromA, fromB] = await Promise.all([
    a!.reconcile({ present: new Map([['x', ['default/a', 'default/shared']]]), registered }),
    b!.reconcile({ present: new Map([['y', ['default/b', 'default/shared']]]), registered }),
  ]);
  assert.equal(fromA.get('default/shared'), fromB.get('default/shared'));
  assert.notEqual(fromA.get('default/a'), fromB.get('default/b'));
  const data = fake.get('ConfigMap', 'relay-vip-allocations', NS)?.['data'] as Record<string, string> | undefined;
  const stored = JSON.parse(data?.['allocations.json'] ?? '{}') as Record<
    string,
    { address: string; owners: string[] }
  >;
  assert.deepEqual(Object.keys(stored).sort(), ['default/a', 'default/b', 'default/shared']);
  assert.deepEqual(stored['default/shared']?.owners, ['x', 'y']);
  assert.equal(new Set(Object.values(stored).map((v) => v.address)).size, 3);
  const again = await new KubernetesVipAllocations(registryApis(kubeConfigOf(fake)), NS, '10.30.0.0/16').reconcile({
    present: new Map([['x', ['default/a', 'default/shared']]]),
    registered,
  });
  assert.equal(again.get('default/a'), fromA.get('default/a'));
});

test('given registry flags, when parsed, then kubernetes settings are read from flags and environment and validated', () => {
  const defaults = parseServerConfig([], {});
  assert.deepEqual([defaults.registry, defaults.namespace, defaults.kubeconfig], ['file', 'gloo-mesh', undefined]);
  const fromEnv = parseServerConfig(['--kube-context', 'ctx'], {
    MESHRELAY_REGISTRY: 'kubernetes',
    MESHRELAY_NAMESPACE: 'mesh',
    KUBECONFIG: '/k',
  });
  assert.deepEqual(
    [fromEnv.registry, fromEnv.namespace, fromEnv.kubeconfig, fromEnv.kubeContext],
    ['kubernetes', 'mesh', '/k', 'ctx'],
  );
  assert.throws(() => parseServerConfig(['--registry', 'etcd'], {}), /--registry/);
  assert.throws(() => parseServerConfig(['--namespace', 'Not_Valid'], {}), /--namespace/);
});

test('given a kubeconfig without the named context, when a kubernetes-mode server starts, then it fails naming --kube-context', async (t) => {
  const fake = await startFakeKube(t);
  await assert.rejects(kubeServer(t, fake, 'r0', ['--kube-context', 'nope']), /--kube-context/);
});
