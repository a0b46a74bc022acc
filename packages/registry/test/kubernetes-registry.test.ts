// The `kubernetes` registry backend against the fake kube-apiserver (a test double of
// kube-apiserver from @meshrelay/testkit), driven through the real @kubernetes/client-node.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { hashToken } from '../src/tokens.ts';
import { NS, clusterCr, recordChanges, startFakeKube, startKubeRegistry, storedWarmCondition } from './kube-harness.ts';

const WARM = {
  type: 'ClusterWarm',
  status: 'True',
  reason: 'FirstSnapshotReceived',
  message: 'an input snapshot was received',
} as const;

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => err instanceof MeshrelayError && err.code === code);
}

function decoded(data: Record<string, string> | undefined, key: string): string | undefined {
  const value = data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

test('given a kubernetes registry, when a cluster is registered, then a CR and an owned Secret holding only the token hash exist', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  const { token, cluster } = await registry.register('east', { clusterDomain: 'cluster.local' });
  const cr = fake.get('KubernetesCluster', 'east', NS);
  assert.deepEqual(cr?.['spec'], { clusterDomain: 'cluster.local', skipWarming: false });
  assert.equal(cluster.metadata.uid, cr?.metadata.uid);
  const secret = fake.get('Secret', 'relay-token-east', NS);
  const data = secret?.['data'] as Record<string, string> | undefined;
  assert.equal(secret?.['type'], 'Opaque');
  assert.equal(decoded(data, 'sha256'), hashToken(token));
  assert.ok(Date.parse(decoded(data, 'expiresAt') ?? '') > Date.now());
  assert.deepEqual(
    secret?.metadata.ownerReferences?.map((r) => r.uid),
    [cr?.metadata.uid],
  );
  const everything = JSON.stringify(fake.requests.map((r) => r.body));
  assert.ok(
    !everything.includes(token) && !everything.includes(Buffer.from(token).toString('base64')),
    'the token never reaches the API',
  );
  assert.deepEqual(
    registry.list().map((c) => c.metadata.name),
    ['east'],
  );
});

test('given a registered cluster, when its token is verified, then the right one passes and a wrong one is refused', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  const { token } = await registry.register('east', {});
  assert.equal((await registry.verifyToken('east', token)).metadata.name, 'east');
  await rejectsWith(registry.verifyToken('east', `${token}x`), 'MESHRELAY_ERR_TOKEN_INVALID');
  await rejectsWith(registry.verifyToken('west', token), 'MESHRELAY_ERR_TOKEN_INVALID');
});

test('given a registered cluster, when it is registered again, then the registry answers CLUSTER_EXISTS', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  await rejectsWith(registry.register('east', {}), 'MESHRELAY_ERR_CLUSTER_EXISTS');
  await rejectsWith(registry.register('Not_A_Name', {}), 'MESHRELAY_ERR_INVALID_ARGUMENT');
});

test('given a new registration, when it is written, then its ClusterWarm condition is False with reason ClusterRegistered', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  const { cluster } = await registry.register('east', {});
  const stored = storedWarmCondition(fake, 'east');
  assert.deepEqual([stored?.status, stored?.reason], ['False', 'ClusterRegistered']);
  assert.equal(cluster.status?.conditions?.[0]?.reason, 'ClusterRegistered');
});

test('given two replicas, when one registers and deregisters a cluster, then the other hears registered and deregistered', async (t) => {
  const fake = await startFakeKube(t);
  const first = await startKubeRegistry(t, fake);
  const second = await startKubeRegistry(t, fake);
  const changes = recordChanges(second);
  await first.register('east', {});
  await waitFor(() => second.get('east') !== undefined, { message: 'second replica never saw the registration' });
  await first.deregister('east');
  await waitFor(() => second.get('east') === undefined, { message: 'second replica never saw the deregistration' });
  const types = changes.map((c) => c.type);
  assert.equal(types[0], 'registered');
  assert.equal(types.at(-1), 'deregistered');
  assert.ok(
    types.slice(1, -1).every((type) => type === 'updated'),
    `changes: ${types.join(', ')}`,
  );
  assert.equal(fake.get('KubernetesCluster', 'east', NS), undefined);
  assert.equal(fake.get('Secret', 'relay-token-east', NS), undefined);
});

test('given a registered cluster, when ClusterWarm=True is set, then it is written through the status subresource', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  await registry.setCondition('east', WARM);
  assert.deepEqual(
    [storedWarmCondition(fake, 'east')?.status, storedWarmCondition(fake, 'east')?.reason],
    ['True', 'FirstSnapshotReceived'],
  );
  assert.ok(
    fake.requests.some(
      (r) => r.method === 'PUT' && r.path.endsWith('/kubernetesclusters/east/status') && r.status === 200,
    ),
  );
  assert.equal(
    fake.get('KubernetesCluster', 'east', NS)?.metadata.generation,
    1,
    'a status write is not a spec change',
  );
  assert.equal(registry.get('east')?.status?.conditions?.find((c) => c.type === 'ClusterWarm')?.status, 'True');
});

test('given two replicas racing to mark a cluster warm, when both write, then both succeed and the condition is True once', async (t) => {
  const fake = await startFakeKube(t);
  const first = await startKubeRegistry(t, fake);
  await first.register('east', {});
  const second = await startKubeRegistry(t, fake);
  await Promise.all([first.setCondition('east', WARM), second.setCondition('east', WARM)]);
  const conditions = (fake.get('KubernetesCluster', 'east', NS)?.['status'] as { conditions: unknown[] }).conditions;
  assert.equal(conditions.length, 1);
  assert.equal(storedWarmCondition(fake, 'east')?.status, 'True');
});

test('given a warm cluster, when a replica asks for ClusterWarm=False, then warmness stays final', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  await registry.setCondition('east', WARM);
  await registry.setCondition('east', {
    type: 'ClusterWarm',
    status: 'False',
    reason: 'ClusterRegistered',
    message: 'stale wish',
  });
  assert.equal(storedWarmCondition(fake, 'east')?.status, 'True');
});

test('given a watched CR, when an operator sets spec.skipWarming through the API, then listeners hear updated', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const changes = recordChanges(registry);
  const cr = fake.get('KubernetesCluster', 'east', NS)!;
  fake.put({ ...cr, spec: { ...(cr['spec'] as object), skipWarming: true } });
  await waitFor(() => registry.get('east')?.spec.skipWarming === true, { message: 'skipWarming never reached memory' });
  assert.deepEqual(
    changes.map((c) => c.type),
    ['updated'],
  );
});

test('given a watched CR, when it is deleted with kubectl, then listeners hear deregistered and its Secret is collected', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const changes = recordChanges(registry);
  const deleted = await fetch(`${fake.url}/apis/admin.gloo.solo.io/v2/namespaces/${NS}/kubernetesclusters/east`, {
    method: 'DELETE',
  });
  assert.equal(deleted.status, 200);
  await waitFor(() => changes.some((c) => c.type === 'deregistered'), { message: 'no deregistered change' });
  assert.equal(registry.get('east'), undefined);
  assert.equal(fake.get('Secret', 'relay-token-east', NS), undefined);
});

test('given a CR applied by an operator without status, when the status writer sees it, then it writes ClusterRegistered', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  fake.put(clusterCr('applied', { skipWarming: false }));
  await waitFor(() => storedWarmCondition(fake, 'applied')?.reason === 'ClusterRegistered', {
    message: 'status never initialised',
  });
  await waitFor(() => registry.get('applied')?.status?.conditions?.[0]?.reason === 'ClusterRegistered');
});

test('given a replica that is not the status writer, when it sees a CR without status, then it leaves it until it leads', async (t) => {
  const fake = await startFakeKube(t);
  let leader = false;
  let notify: (leading: boolean) => void = () => undefined;
  const election = {
    isLeader: () => leader,
    onChange: (cb: (leading: boolean) => void) => ((notify = cb), () => undefined),
  };
  const registry = await startKubeRegistry(t, fake, { statusWriter: election });
  fake.put(clusterCr('applied'));
  await waitFor(() => registry.get('applied') !== undefined);
  assert.equal(storedWarmCondition(fake, 'applied'), undefined);
  leader = true;
  notify(true);
  await waitFor(() => storedWarmCondition(fake, 'applied')?.reason === 'ClusterRegistered', {
    message: 'the new leader never initialised status',
  });
});

test('given a dropped watch and a compacted history, when the registry reconnects, then it loses no update or deletion', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  await registry.register('west', {});
  await waitFor(() => fake.openWatchCount === 1);
  const changes = recordChanges(registry);
  fake.closeWatches();
  const east = fake.get('KubernetesCluster', 'east', NS)!;
  fake.put({ ...east, spec: { skipWarming: true } });
  fake.remove('KubernetesCluster', 'west', NS);
  fake.compactHistory();
  await waitFor(() => registry.get('east')?.spec.skipWarming === true && registry.get('west') === undefined, {
    message: `registry after the 410: ${JSON.stringify(registry.list().map((c) => [c.metadata.name, c.spec]))}`,
  });
  assert.deepEqual(changes.map((c) => c.type).sort(), ['deregistered', 'updated']);
});

test('given API errors on list and watch, when the watch breaks, then the registry backs off, recovers and sees later changes', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  await waitFor(() => fake.openWatchCount === 1);
  fake.failNext(4, 500, { match: (r) => r.method === 'GET' && r.path.endsWith('/kubernetesclusters') });
  fake.closeWatches();
  const east = fake.get('KubernetesCluster', 'east', NS)!;
  fake.put({ ...east, spec: { skipWarming: true } });
  await waitFor(() => registry.get('east')?.spec.skipWarming === true, { message: 'registry never recovered' });
  const failed = fake.requests.filter((r) => r.status === 500).length;
  assert.equal(failed, 4);
});

test('given an unreachable API, when a registry is created, then it fails with UNAVAILABLE instead of starting empty', async (t) => {
  const fake = await startFakeKube(t);
  fake.failNext(1000, 503, { match: (r) => r.path.endsWith('/kubernetesclusters') });
  await rejectsWith(startKubeRegistry(t, fake, { initialSyncTimeoutMs: 300 }), 'MESHRELAY_ERR_UNAVAILABLE');
});

test('given a registered cluster, when its token is rotated, then old and new tokens both work during the overlap', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  const { token: first } = await registry.register('east', {});
  const { token: second } = await registry.rotateToken('east');
  assert.notEqual(first, second);
  await registry.verifyToken('east', first);
  await registry.verifyToken('east', second);
  const data = fake.get('Secret', 'relay-token-east', NS)?.['data'] as Record<string, string>;
  assert.equal(decoded(data, 'previousSha256'), hashToken(first));
});

test('given a cluster re-created under the same name, when the old token is presented, then it is refused', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  const { token } = await registry.register('east', {});
  const secret = fake.get('Secret', 'relay-token-east', NS)!;
  fake.remove('KubernetesCluster', 'east', NS);
  fake.put(secret);
  fake.put(clusterCr('east'));
  await waitFor(
    () =>
      registry.get('east') !== undefined &&
      registry.get('east')?.metadata.uid !== secret.metadata.ownerReferences?.[0]?.uid,
  );
  await rejectsWith(registry.verifyToken('east', token), 'MESHRELAY_ERR_TOKEN_INVALID');
});

test('given a registered cluster, when update sets skipWarming, then the CR spec is patched and memory follows', async (t) => {
  const fake = await startFakeKube(t);
  const registry = await startKubeRegistry(t, fake);
  await registry.register('east', {});
  const updated = await registry.update('east', { skipWarming: true });
  assert.equal(updated.spec.skipWarming, true);
  assert.equal((fake.get('KubernetesCluster', 'east', NS)?.['spec'] as { skipWarming?: boolean }).skipWarming, true);
  await rejectsWith(registry.update('west', { skipWarming: true }), 'MESHRELAY_ERR_CLUSTER_NOT_FOUND');
  await rejectsWith(registry.deregister('west'), 'MESHRELAY_ERR_CLUSTER_NOT_FOUND');
});
