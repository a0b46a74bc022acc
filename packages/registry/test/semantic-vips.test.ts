// Policy and instance addresses kept by the file store: from their own pools, across restarts,
// an instance's address kept while it moves between clusters, released only on positive evidence.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildPod, buildTestInputSnapshot, buildVirtualDestination } from '@meshrelay/testkit';
import { DEFAULT_VIP_POOLS, POLICY_ADDRESSES_ANNOTATION, virtualDestinationKeys } from '@meshrelay/translator';
import { KubernetesVipAllocations, VipAllocations, registryApis, type VipDemand } from '../src/index.ts';
import { NS, kubeConfigOf, startFakeKube } from './kube-harness.ts';

/** The destination without its round-robin and closest addresses. */
const PLAIN_DESTINATION = buildVirtualDestination({
  name: 'db',
  namespace: 'shop',
  hosts: ['db.global'],
  services: [{ name: 'db', namespace: 'shop' }],
  ports: [{ number: 7000, protocol: 'GRPC' }],
});

/** The destination opted in to its round-robin and closest addresses. */
const DESTINATION: Resource = {
  ...PLAIN_DESTINATION,
  metadata: { ...PLAIN_DESTINATION.metadata, annotations: { [POLICY_ADDRESSES_ANNOTATION]: 'true' } },
};

const instance = (id: string, ip: string): Resource =>
  buildPod({ name: id, namespace: 'shop', ip, labels: { app: 'db', 'meshrelay.io/instance': id } });

/** The demand translation would give for these present clusters' inputs. */
function demand(present: Record<string, Resource[]>, registered: string[]): VipDemand {
  return {
    present: new Map(
      Object.entries(present).map(([cluster, resources]) => [
        cluster,
        virtualDestinationKeys(new Map([[cluster, buildTestInputSnapshot(cluster, resources)]])),
      ]),
    ),
    registered: new Set(registered),
  };
}

function storePath(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-semantic-vips-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'vips.json');
}

test('given a destination and an instance, when allocated and the server restarts with their clusters absent, then every address is kept, each from its pool', async (t) => {
  const path = storePath(t);
  const first = await new VipAllocations(path, DEFAULT_VIP_POOLS).reconcile(
    demand({ east: [DESTINATION], west: [instance('db-0', '10.2.0.1')] }, ['east', 'west']),
  );
  assert.deepEqual([...first.keys()].sort(), [
    'closest:shop/db',
    'instance:shop/db-0',
    'round-robin:shop/db',
    'shop/db',
  ]);
  assert.match(first.get('shop/db') as string, /^10\.30\./);
  assert.match(first.get('round-robin:shop/db') as string, /^10\.31\./);
  assert.match(first.get('closest:shop/db') as string, /^10\.32\./);
  assert.match(first.get('instance:shop/db-0') as string, /^10\.33\./);

  const restarted = await new VipAllocations(path, DEFAULT_VIP_POOLS).reconcile(demand({}, ['east', 'west']));
  assert.deepEqual([...restarted].sort(), [...first].sort());
});

test('given an instance that moves to another cluster, when both clusters report, then its address stays; when no cluster runs it, it is released', async (t) => {
  const store = new VipAllocations(storePath(t), DEFAULT_VIP_POOLS);
  const before = await store.reconcile(
    demand({ east: [DESTINATION, instance('db-0', '10.1.0.1')], west: [] }, ['east', 'west']),
  );
  // The instance left east and runs in west: one reconcile sees both.
  const moved = await store.reconcile(
    demand({ east: [DESTINATION], west: [instance('db-0', '10.2.0.7')] }, ['east', 'west']),
  );
  assert.equal(moved.get('instance:shop/db-0'), before.get('instance:shop/db-0'));
  // West absent (disconnected): no evidence it stopped, so the address stays.
  const westAbsent = await store.reconcile(demand({ east: [DESTINATION] }, ['east', 'west']));
  assert.equal(westAbsent.get('instance:shop/db-0'), before.get('instance:shop/db-0'));
  const gone = await store.reconcile(demand({ east: [DESTINATION], west: [] }, ['east', 'west']));
  assert.equal(gone.has('instance:shop/db-0'), false);
  assert.equal(gone.get('round-robin:shop/db'), before.get('round-robin:shop/db'));
});

test('given a destination that no cluster declares any more, when reconciled, then its default and policy addresses are released together', async (t) => {
  const store = new VipAllocations(storePath(t), DEFAULT_VIP_POOLS);
  await store.reconcile(demand({ east: [DESTINATION] }, ['east']));
  const dropped = await store.reconcile(demand({ east: [] }, ['east']));
  assert.deepEqual([...dropped.keys()], []);
});

test('given a destination that turns its policy addresses off, when reconciled, then they are kept while its cluster is absent and released once its input says so; its default address stays', async (t) => {
  const store = new VipAllocations(storePath(t), DEFAULT_VIP_POOLS);
  const before = await store.reconcile(demand({ east: [DESTINATION], west: [] }, ['east', 'west']));
  // East absent: no evidence the annotation changed, so nothing is released.
  const eastAbsent = await store.reconcile(demand({ west: [] }, ['east', 'west']));
  assert.deepEqual([...eastAbsent].sort(), [...before].sort());
  const off = await store.reconcile(demand({ east: [PLAIN_DESTINATION], west: [] }, ['east', 'west']));
  assert.deepEqual([...off.keys()], ['shop/db']);
  assert.equal(off.get('shop/db'), before.get('shop/db'));
});

test('given a destination without the annotation, when reconciled, then it gets only its default address', async (t) => {
  const store = new VipAllocations(storePath(t), DEFAULT_VIP_POOLS);
  const table = await store.reconcile(demand({ east: [PLAIN_DESTINATION] }, ['east']));
  assert.deepEqual([...table.keys()], ['shop/db']);
});

test('given a kind of address turned off (its pool empty), when reconciled, then its keys get no address and those kept before are dropped', async (t) => {
  const path = storePath(t);
  const claims = demand({ east: [DESTINATION, instance('db-0', '10.1.0.1')] }, ['east']);
  const before = await new VipAllocations(path, DEFAULT_VIP_POOLS).reconcile(claims);
  assert.ok(before.has('round-robin:shop/db'));
  const off = await new VipAllocations(path, { ...DEFAULT_VIP_POOLS, roundRobin: '', instance: '' }).reconcile(claims);
  assert.deepEqual([...off.keys()].sort(), ['closest:shop/db', 'shop/db']);
  assert.equal(off.get('closest:shop/db'), before.get('closest:shop/db'));
});

test('given two replicas on the ConfigMap store, when each reconciles one cluster at once, then they agree on every address and a new replica reads the same ones', async (t) => {
  const fake = await startFakeKube(t);
  const replica = (): KubernetesVipAllocations =>
    new KubernetesVipAllocations(registryApis(kubeConfigOf(fake)), NS, DEFAULT_VIP_POOLS);
  const registered = ['east', 'west'];
  const [fromA, fromB] = await Promise.all([
    replica().reconcile(demand({ east: [DESTINATION, instance('db-0', '10.1.0.1')] }, registered)),
    replica().reconcile(demand({ west: [DESTINATION, instance('db-1', '10.2.0.1')] }, registered)),
  ]);
  for (const key of ['shop/db', 'round-robin:shop/db', 'closest:shop/db']) assert.equal(fromA.get(key), fromB.get(key));
  // A replica started later, with east's input again and west absent.
  const later = await replica().reconcile(demand({ east: [DESTINATION, instance('db-0', '10.1.0.1')] }, registered));
  assert.equal(later.size, 5);
  assert.equal(later.get('instance:shop/db-0'), fromA.get('instance:shop/db-0'));
  assert.equal(later.get('instance:shop/db-1'), fromB.get('instance:shop/db-1'));
  assert.equal(new Set(later.values()).size, 5, 'no address handed out twice');
});
