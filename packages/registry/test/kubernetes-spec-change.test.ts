// The Kubernetes registry's spec writes are resourceVersion-guarded replaces: a CR changed
// between the registry's read and its write answers 409, and the change is applied again to the
// fresh CR. Against the fake kube-apiserver (a test double from @meshrelay/testkit), which
// answers a stale resourceVersion with a real 409 Conflict.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import type { FakeKubeRequest } from '@meshrelay/testkit';
import { registryApis } from '../src/kubernetes-objects.ts';
import { changeClusterSpec } from '../src/kubernetes-spec-change.ts';
import { NS, kubeConfigOf, startFakeKube, startKubeRegistry } from './kube-harness.ts';

type StoredCr = { metadata: { uid: string; resourceVersion: string }; spec: Record<string, unknown> };

const isReplaceOf =
  (name: string) =>
  (r: FakeKubeRequest): boolean =>
    r.method === 'PUT' && r.path.endsWith(`/kubernetesclusters/${name}`);

test('given an operator edit landing between the read and the write, when the registry revokes, then the 409 is retried on the fresh CR and both fields stay', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  let edited = false;
  fake.failNext(1, 500, {
    // Not a failure: the predicate only lets the operator's write in just before the first replace.
    match: (r) => {
      if (!edited && isReplaceOf('east')(r)) {
        edited = true;
        const cr = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
        fake.put({
          ...cr,
          apiVersion: 'admin.gloo.solo.io/v2',
          kind: 'KubernetesCluster',
          spec: { ...cr.spec, trustDomain: 'edited.example' },
        });
      }
      return false;
    },
  });
  const revoked = await registry.revoke('east');
  const replaces = fake.requests.filter(isReplaceOf('east')).map((r) => r.status);
  assert.deepEqual(replaces, [409, 200], 'the first replace met the stale resourceVersion, the second wrote');
  const cr = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
  assert.equal(cr.spec['trustDomain'], 'edited.example', "the operator's edit stays");
  assert.equal(
    Date.parse(String(cr.spec['revokeCertificatesBefore'])),
    revoked.revokedBefore.getTime(),
    'the mark is written',
  );
});

test('given a CR that changes under every write, when the registry updates it, then it gives up with UNAVAILABLE and writes nothing', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const before = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
  fake.failNext(100, 409, { match: isReplaceOf('east') });
  await assert.rejects(
    registry.update('east', { skipWarming: true }),
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_UNAVAILABLE' &&
      /KubernetesCluster gloo-mesh\/east changed under each of 5 attempts/.test(err.message),
  );
  assert.equal(fake.requests.filter(isReplaceOf('east')).length, 5, 'bounded: five attempts');
  const after = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
  assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
  assert.equal(after.spec['skipWarming'], false);
});

test('given a cluster registered again under its name by another replica, when a stale replica revokes the old one, then it answers CLUSTER_NOT_FOUND and leaves the new CR alone', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const old = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
  fake.remove('KubernetesCluster', 'east', NS);
  fake.put({
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: { name: 'east', namespace: NS, uid: 'new-uid' },
    spec: {},
  });
  await assert.rejects(
    changeClusterSpec(registryApis(kubeConfigOf(fake)), NS, { name: 'east', uid: old.metadata.uid }, (s) => ({
      ...s,
      skipWarming: true,
    })),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_CLUSTER_NOT_FOUND',
  );
  const now = fake.get('KubernetesCluster', 'east', NS) as unknown as StoredCr;
  assert.equal(now.spec['skipWarming'], undefined);
});
