// Inputs are kept in Redis a resource per field: a change writes what changed, and a reader
// (another replica, or this one after a restart) gets back exactly the input that was held.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import { buildInputSnapshot, type InputSnapshot } from '@meshrelay/api';
import { encodeInput } from '../src/redis-codec.ts';
import { service } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, recordPartsWrites, uniquePrefix } from './redis-harness.ts';

// One redis-server for this file; every test uses its own key prefix.
let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

/** An input of cluster east holding one Service per entry, with that port. */
function inputWith(generation: number, ports: Readonly<Record<string, number>>, epoch = 'e'): InputSnapshot {
  return buildInputSnapshot({
    cluster: 'east',
    epoch,
    generation,
    resources: Object.entries(ports).map(([name, port]) => service(name, port)),
  });
}

test('redis input parts: given an input put, when the next generation differs in one resource, then the write carries only that resource and a fresh replica reads the new input back', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const writes = await recordPartsWrites(t, server.url, ':input-parts:');
  await a.store.putInput(inputWith(1, { a: 80, b: 80, c: 80, d: 80 }));
  const next = inputWith(2, { a: 80, b: 80, c: 81, d: 80 });
  await a.store.putInput(next);

  await waitFor(() => writes.length === 2, { timeoutMs: 5000, message: `saw ${writes.length} input writes` });
  assert.equal(writes[0]?.length, 4);
  assert.deepEqual(writes[1], ['r:Service.v1 default/c']);
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  assert.deepEqual(await b.store.getInput('east'), next);
});

test('redis input parts: given another replica wrote the input since, when a replica puts a change against its own last write, then Redis holds the whole new input', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  await a.store.putInput(inputWith(1, { a: 80, b: 80 }));
  await b.store.putInput(inputWith(2, { x: 80, y: 80, z: 80 }));
  const writes = await recordPartsWrites(t, server.url, ':input-parts:');
  const next = inputWith(3, { a: 80, b: 81 });
  await a.store.putInput(next);

  // Tried as one changed resource on A's base, refused by the script, then written whole.
  await waitFor(() => writes.length === 2, { timeoutMs: 5000, message: `saw ${writes.length} input writes` });
  assert.deepEqual(
    writes.map((w) => w.length),
    [1, 2],
  );
  const reader = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.deepEqual(await reader.store.getInput('east'), next);
});

test('redis input parts: given an input stored whole in the old format, when a replica reads it, then it gets the snapshot, and its next write replaces the old value', async (t) => {
  const keyPrefix = uniquePrefix();
  const plain = plainClientFor(t, server.url);
  const old = inputWith(1, { a: 80 });
  await plain.set(`${keyPrefix}:input:east`, await encodeInput(old, 'old-replica'));
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  assert.deepEqual(await a.store.getInput('east'), old);

  const next = inputWith(2, { a: 81 });
  await a.store.putInput(next);
  assert.equal(await plain.exists(`${keyPrefix}:input:east`), 0);
  const reader = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.deepEqual(await reader.store.getInput('east'), next);
});

test('redis input parts: given an old-format value of a newer generation, when a replica puts an older one, then Redis keeps the old value and the replica takes it', async (t) => {
  const keyPrefix = uniquePrefix();
  const plain = plainClientFor(t, server.url);
  const newer = inputWith(5, { a: 90 });
  await plain.set(`${keyPrefix}:input:east`, await encodeInput(newer, 'old-replica'));
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });

  await a.store.putInput(inputWith(3, { a: 80 }));

  assert.equal(a.store.memoryInputs().get('east')?.hash, newer.hash);
  assert.equal(await plain.exists(`${keyPrefix}:input-parts:east`), 0);
});
