import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePort, startRedisServer, waitFor } from '@meshrelay/testkit';
import type { StoreHealth } from '../src/index.ts';
import { decodeInput, decodeOutput } from '../src/redis-codec.ts';
import { inputOf, outputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, redisServerFor, redisStoreFor } from './redis-harness.ts';

const WAIT = { timeoutMs: 10_000 };

test('redis outage: given Redis was killed, when an input is put, then it is kept in memory and pending write-back', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  await server.kill();
  await waitFor(() => !store.health().redisUp, { ...WAIT, message: 'the store never noticed Redis was down' });

  const snapshot = inputOf('east');
  await store.putInput(snapshot);

  assert.equal((await store.getInput('east'))?.hash, snapshot.hash);
  assert.equal(store.memoryInputs().get('east'), snapshot);
  assert.deepEqual(store.health(), { backend: 'redis', redisUp: false, pendingWriteBack: 1 });
});

test('redis outage: given Redis was killed, when outputs are put and deleted, then each cluster counts once as pending', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  await store.putOutput(outputOf('west', []));
  await server.kill();
  await waitFor(() => !store.health().redisUp, { ...WAIT, message: 'the store never noticed Redis was down' });

  await store.putOutput(outputOf('east', []));
  await store.putOutput(outputOf('east', [inputOf('east')]));
  await store.deleteOutput('west');

  assert.equal(store.health().pendingWriteBack, 2);
  assert.equal(await store.getOutput('west'), undefined);
});

test('redis outage: given inputs put before and during an outage, when Redis restarts empty, then memory is written back', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  const healths: StoreHealth[] = [];
  store.onHealthChange((health) => healths.push(health));
  const before = inputOf('west');
  await store.putInput(before);
  await server.kill();
  await waitFor(() => !store.health().redisUp, { ...WAIT, message: 'the store never noticed Redis was down' });
  const during = inputOf('east', { generation: 5 });
  await store.putInput(during);
  const output = outputOf('east', [during, before]);
  await store.putOutput(output);
  assert.equal(store.health().pendingWriteBack, 2);

  await server.restart();
  await waitFor(() => store.health().redisUp && store.health().pendingWriteBack === 0, { ...WAIT, message: 'write-back never finished' });

  const redis = plainClientFor(t, server.url);
  const [east, west, eastOutput] = await redis.mget('mr:input:east', 'mr:input:west', 'mr:output:east');
  assert.equal(decodeInput(east ?? '', 'east').snapshot.hash, during.hash);
  assert.equal(decodeInput(west ?? '', 'west').snapshot.hash, before.hash);
  assert.deepEqual(decodeOutput(eastOutput ?? '', 'east').snapshot, output);
  assert.deepEqual(healths.at(-1), { backend: 'redis', redisUp: true, pendingWriteBack: 0 });
  assert.ok(healths.some((h) => !h.redisUp && h.pendingWriteBack > 0), 'health listeners saw the outage');
});

test('redis outage: given an input deleted during an outage, when Redis returns with the old value, then the delete is written back', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  const redis = plainClientFor(t, server.url);
  await store.putInput(inputOf('east'));
  server.pause();
  await store.deleteInput('east');
  assert.equal(store.health().pendingWriteBack, 1);
  assert.equal(await store.getInput('east'), undefined, 'a pending delete is not undone by a read');

  server.resume();
  await waitFor(() => store.health().pendingWriteBack === 0, { ...WAIT, message: 'the delete was never written back' });
  assert.equal(await redis.exists('mr:input:east'), 0);
});

test('redis outage: given Redis hangs, when an input is put, then the put returns and the input is written once Redis answers', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  server.pause();
  const snapshot = inputOf('east');
  await store.putInput(snapshot);
  assert.equal(store.health().pendingWriteBack, 1);

  server.resume();
  await waitFor(() => store.health().pendingWriteBack === 0, { ...WAIT, message: 'the input was never written back' });
  const redis = plainClientFor(t, server.url);
  assert.equal(decodeInput((await redis.get('mr:input:east')) ?? '', 'east').snapshot.hash, snapshot.hash);
});

test('redis outage: given Redis is not running when the store starts, when it starts later, then inputs put meanwhile reach it', async (t) => {
  const port = await freePort();
  const { store } = redisStoreFor(t, { url: `redis://127.0.0.1:${port}`, replicaId: 'a', keyPrefix: 'mr' });
  const snapshot = inputOf('east');
  await store.putInput(snapshot);
  assert.deepEqual(store.health(), { backend: 'redis', redisUp: false, pendingWriteBack: 1 });

  const server = await startRedisServer({ port });
  t.after(() => server.stop());
  await waitFor(() => store.health().redisUp && store.health().pendingWriteBack === 0, { ...WAIT, message: 'write-back never finished' });
  const redis = plainClientFor(t, server.url);
  assert.equal(decodeInput((await redis.get('mr:input:east')) ?? '', 'east').snapshot.hash, snapshot.hash);
});

test('redis outage: given another replica wrote while this one was cut off, when Redis returns, then the newer input wins in both', async (t) => {
  const server = await redisServerFor(t);
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 1 }));
  await server.kill();
  await waitFor(() => !a.store.health().redisUp, { ...WAIT, message: 'A never noticed Redis was down' });
  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 2 }));

  await server.restart();
  const redis = plainClientFor(t, server.url);
  const newer = inputOf('east', { epoch: 'e', generation: 9, services: ['newer'] });
  // Written before A reconnects would be ideal; either order must end with generation 9 everywhere.
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix: 'mr' });
  await b.store.putInput(newer);
  await waitFor(() => a.store.health().pendingWriteBack === 0, { ...WAIT, message: 'A never wrote back' });
  await waitFor(async () => (await a.store.getInput('east'))?.hash === newer.hash, { ...WAIT, message: 'A never took generation 9' });
  assert.equal(decodeInput((await redis.get('mr:input:east')) ?? '', 'east').snapshot.hash, newer.hash);
});
