// The conditional input write compares against a small version hash beside each value, and the
// store's per-key bookkeeping does not outlive the clusters it was kept for.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import { formatInputVersion } from '../src/input-version.ts';
import { encodeInput } from '../src/redis-codec.ts';
import { inputOf, outputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, uniquePrefix } from './redis-harness.ts';

let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

test('redis versions: given a put input, when Redis is read, then a version hash beside the value names its epoch and generation, and goes with the value', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const input = inputOf('east', { epoch: 'e-1', generation: 7 });
  await a.store.putInput(input);

  const redis = plainClientFor(t, server.url);
  assert.deepEqual(await redis.hgetall(`${keyPrefix}:input-version:east`), {
    epoch: 'e-1',
    generation: '7',
    resume: formatInputVersion(input),
  });
  await a.store.deleteInput('east');
  assert.equal(await redis.exists(`${keyPrefix}:input-parts:east`, `${keyPrefix}:input-version:east`), 0);
});

test('redis versions: given the version hash names a newer generation, when A puts an older one, then the write reads only the version and refuses', async (t) => {
  const keyPrefix = uniquePrefix();
  const redis = plainClientFor(t, server.url);
  // The value's own header says generation 3, the version hash says 9: only the hash may decide.
  const held = inputOf('east', { epoch: 'e', generation: 3, services: ['held'] });
  await redis.set(`${keyPrefix}:input:east`, await encodeInput(held, 'other'));
  await redis.hset(`${keyPrefix}:input-version:east`, { epoch: 'e', generation: '9' });
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });

  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 5, services: ['stale'] }));

  assert.equal(await redis.get(`${keyPrefix}:input:east`), await encodeInput(held, 'other'));
  assert.deepEqual(await redis.hgetall(`${keyPrefix}:input-version:east`), { epoch: 'e', generation: '9' });
});

test('redis versions: given a value written without a version hash, when A puts an older generation, then Redis keeps the newer one and A takes it', async (t) => {
  const keyPrefix = uniquePrefix();
  const redis = plainClientFor(t, server.url);
  const newer = inputOf('east', { epoch: 'e', generation: 4, services: ['newer'] });
  await redis.set(`${keyPrefix}:input:east`, await encodeInput(newer, 'old-replica'));
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });

  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 2, services: ['older'] }));

  assert.equal(a.store.memoryInputs().get('east')?.hash, newer.hash);
  assert.equal(await redis.get(`${keyPrefix}:input:east`), await encodeInput(newer, 'old-replica'));
});

test('redis versions: given two replicas, when each puts generations out of order, then both end on the newest and Redis agrees', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const newest = inputOf('east', { epoch: 'e', generation: 6, services: ['six'] });
  await a.store.putInput(newest);
  await b.store.putInput(inputOf('east', { epoch: 'e', generation: 5, services: ['five'] }));

  await waitFor(() => b.store.memoryInputs().get('east')?.hash === newest.hash, {
    timeoutMs: 5000,
    message: 'B never took generation 6',
  });
  assert.equal(a.store.memoryInputs().get('east')?.hash, newest.hash);
  const redis = plainClientFor(t, server.url);
  assert.deepEqual(await redis.hgetall(`${keyPrefix}:input-version:east`), {
    epoch: 'e',
    generation: '6',
    resume: formatInputVersion(newest),
  });
  const c = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.equal((await c.store.getInput('east'))?.hash, newest.hash);
});

test('bookkeeping: given many clusters put, read and deleted on two replicas, when all are gone, then neither store keeps an entry for them', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const names = Array.from({ length: 50 }, (_, i) => `churn-${i}`);
  for (const name of names) {
    const input = inputOf(name);
    await a.store.putInput(input);
    await a.store.putOutput(outputOf(name, [input]));
    await b.store.loadInputs([name]);
    await b.store.getOutput(name);
  }
  for (const name of names) {
    await a.store.deleteInput(name);
    await a.store.deleteOutput(name);
  }
  await waitFor(() => names.every((n) => !b.store.memoryInputs().has(n)), {
    timeoutMs: 5000,
    message: 'B never dropped the deleted inputs',
  });
  // Each replica drops a deregistered cluster's output itself (outputs have no change channel).
  for (const name of names) await b.store.deleteOutput(name);

  assert.equal(a.store.bookkeepingSize(), 0);
  assert.equal(b.store.bookkeepingSize(), 0);
});
