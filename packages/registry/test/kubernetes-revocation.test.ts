// Revocation with the `kubernetes` registry backend against the fake kube-apiserver (a test
// double of kube-apiserver from @meshrelay/testkit).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { NS, clusterCr, recordChanges, startFakeKube, startKubeRegistry } from './kube-harness.ts';

const NOW = new Date('2026-11-23T10:00:00.750Z');

test('given a registered cluster, when it is revoked, then the CR carries the mark to the second and only the new token verifies', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake, { now: () => NOW });
  const { token: old } = await registry.register('east', {});
  const revoked = await registry.revoke('east');
  assert.equal(
    (fake.get('KubernetesCluster', 'east', NS)?.['spec'] as Record<string, unknown>)['revokeCertificatesBefore'],
    '2026-11-23T10:00:00Z',
  );
  assert.equal(revoked.revokedBefore.toISOString(), '2026-11-23T10:00:00.000Z');
  assert.equal(registry.get('east')?.spec.revokeCertificatesBefore, '2026-11-23T10:00:00Z');
  await registry.verifyToken('east', revoked.token);
  await assert.rejects(
    registry.verifyToken('east', old),
    (e: unknown) => e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_TOKEN_INVALID',
  );
});

test('given two replicas, when one revokes, then the other hears an update carrying the mark', async (t) => {
  const fake = await startFakeKube(t);
  const first = await startKubeRegistry(t, fake);
  const second = await startKubeRegistry(t, fake);
  await first.register('east', {});
  await waitFor(() => second.get('east') !== undefined);
  const changes = recordChanges(second);
  const revoked = await first.revoke('east');
  await waitFor(
    () => changes.some((c) => c.type === 'updated' && c.cluster.spec.revokeCertificatesBefore !== undefined),
    { message: 'an update with the mark' },
  );
  assert.equal(Date.parse(second.get('east')?.spec.revokeCertificatesBefore ?? ''), revoked.revokedBefore.getTime());
});

test('given a CR whose revocation mark is not a timestamp, when it is applied, then the registry keeps the previous copy', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const east = fake.get('KubernetesCluster', 'east', NS) as unknown as Record<string, unknown>;
  fake.put({ ...east, spec: { revokeCertificatesBefore: 'yesterday' } } as never);
  fake.put(clusterCr('west', { revokeCertificatesBefore: 'yesterday' }));
  fake.put(clusterCr('north', {}));
  await waitFor(() => registry.get('north') !== undefined, { message: 'a later valid CR to be seen' });
  assert.equal(registry.get('west'), undefined);
  assert.equal(registry.get('east')?.spec.revokeCertificatesBefore, undefined);
  assert.equal(registry.get('east')?.spec.skipWarming, false);
});
