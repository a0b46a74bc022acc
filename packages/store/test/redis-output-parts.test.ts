import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import { encodeOutput } from '../src/redis-codec.ts';
import { plainClientFor, readyRedisStoreFor, recordPartsWrites, uniquePrefix } from './redis-harness.ts';

// One redis-server for this file; every test uses its own key prefix.
let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

function serviceEntry(name: string, address: string): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'istio-system' },
    spec: { hosts: [`${name}.mesh.internal`], endpoints: [{ address }] },
  } as Resource;
}

function outputWith(addresses: readonly string[]): OutputSnapshot {
  return buildOutputSnapshot({
    cluster: 'east',
    resources: addresses.map((address, i) => serviceEntry(`svc-${i}`, address)),
    provenance: [{ cluster: 'east', inputHash: addresses.join(',') }],
  });
}

test('redis output parts: given an output put, when the next output differs in one resource, then the write carries only that resource', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const first = outputWith(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  const next = outputWith(['10.0.0.1', '10.0.0.9', '10.0.0.3']);
  const writes = await recordPartsWrites(t, server.url, 'output-parts');
  await a.store.putOutput(first);
  await a.store.putOutput(next);

  await waitFor(() => writes.length === 2, { timeoutMs: 5000, message: `saw ${writes.length} output writes` });
  assert.equal(writes[0]?.length, 3);
  assert.deepEqual(writes[1], ['r:ServiceEntry.networking.istio.io/v1 istio-system/svc-1']);
  assert.deepEqual(await b.store.getOutput('east'), next);
});

test('redis output parts: given another replica wrote the output since, when a replica puts a change against its own last write, then Redis holds the whole new output', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  await a.store.putOutput(outputWith(['10.0.0.1', '10.0.0.2']));
  await b.store.putOutput(outputWith(['10.0.1.1', '10.0.1.2', '10.0.1.3']));
  const writes = await recordPartsWrites(t, server.url, 'output-parts');
  const next = outputWith(['10.0.0.1', '10.0.0.7']);
  await a.store.putOutput(next);

  // Tried as one changed resource on A's base, refused by the script, then written whole.
  await waitFor(() => writes.length === 2, { timeoutMs: 5000, message: `saw ${writes.length} output writes` });
  assert.deepEqual(
    writes.map((w) => w.length),
    [1, 2],
  );

  const reader = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.deepEqual(await reader.store.getOutput('east'), next);
});

test('redis output parts: given an output stored whole in the old format, when a replica reads it, then it gets the snapshot, and its next write replaces the old value', async (t) => {
  const keyPrefix = uniquePrefix();
  const plain = plainClientFor(t, server.url);
  const old = outputWith(['10.0.0.1']);
  await plain.set(`${keyPrefix}:output:east`, await encodeOutput(old, 'old-replica'));
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  assert.deepEqual(await a.store.getOutput('east'), old);

  const next = outputWith(['10.0.0.2']);
  await a.store.putOutput(next);
  assert.equal(await plain.exists(`${keyPrefix}:output:east`), 0);
  const reader = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.deepEqual(await reader.store.getOutput('east'), next);
});

test('redis output parts: given stored parts whose resources were edited, when a replica reads them, then the output is refused as not matching its hash', async (t) => {
  const keyPrefix = uniquePrefix();
  const plain = plainClientFor(t, server.url);
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  await a.store.putOutput(outputWith(['10.0.0.1', '10.0.0.2']));
  await plain.hset(
    `${keyPrefix}:output-parts:east`,
    'r:ServiceEntry.networking.istio.io/v1 istio-system/svc-1',
    JSON.stringify(serviceEntry('svc-1', '10.6.6.6')),
  );

  const reader = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.equal(await reader.store.getOutput('east'), undefined);
  assert.ok(
    reader.records.some(
      (r) => (r.err as { code?: string } | undefined)?.code === 'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
    ),
    'the mismatch is logged with its code',
  );
});
