import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePort, startRedisServer, waitFor } from '@meshrelay/testkit';
import type { InputChangedEvent, StoreHealth } from '../src/index.ts';
import { decodeInputParts } from '../src/redis-input-parts.ts';
import { decodeOutputParts } from '../src/redis-output-parts.ts';
import { inputOf, outputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, redisServerFor, redisStoreFor } from './redis-harness.ts';
import { startTcpProxyFor } from './tcp-proxy.ts';

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
  await waitFor(() => store.health().redisUp && store.health().pendingWriteBack === 0, {
    ...WAIT,
    message: 'write-back never finished',
  });

  const redis = plainClientFor(t, server.url);
  assert.equal((await decodeInputParts(await redis.hgetall('mr:input-parts:east'), 'east')).snapshot.hash, during.hash);
  assert.equal((await decodeInputParts(await redis.hgetall('mr:input-parts:west'), 'west')).snapshot.hash, before.hash);
  assert.deepEqual((await decodeOutputParts(await redis.hgetall('mr:output-parts:east'), 'east')).snapshot, output);
  assert.deepEqual(healths.at(-1), { backend: 'redis', redisUp: true, pendingWriteBack: 0 });
  assert.ok(
    healths.some((h) => !h.redisUp && h.pendingWriteBack > 0),
    'health listeners saw the outage',
  );
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
  assert.equal(await redis.exists('mr:input-parts:east', 'mr:input-version:east'), 0);
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
  assert.equal(
    (await decodeInputParts(await redis.hgetall('mr:input-parts:east'), 'east')).snapshot.hash,
    snapshot.hash,
  );
});

test('redis outage: given Redis is not running when the store starts, when it starts later, then inputs put meanwhile reach it', async (t) => {
  const port = await freePort();
  const { store } = redisStoreFor(t, { url: `redis://127.0.0.1:${port}`, replicaId: 'a', keyPrefix: 'mr' });
  const snapshot = inputOf('east');
  await store.putInput(snapshot);
  assert.deepEqual(store.health(), { backend: 'redis', redisUp: false, pendingWriteBack: 1 });

  const server = await startRedisServer({ port });
  t.after(() => server.stop());
  await waitFor(() => store.health().redisUp && store.health().pendingWriteBack === 0, {
    ...WAIT,
    message: 'write-back never finished',
  });
  const redis = plainClientFor(t, server.url);
  assert.equal(
    (await decodeInputParts(await redis.hgetall('mr:input-parts:east'), 'east')).snapshot.hash,
    snapshot.hash,
  );
});

test('redis outage: given A was cut off and put generation 2, when B wrote generation 9 meanwhile, then A keeps Redis at 9 and takes it', async (t) => {
  const server = await redisServerFor(t);
  const proxy = await startTcpProxyFor(t, server.port);
  const a = await readyRedisStoreFor(t, { url: `redis://127.0.0.1:${proxy.port}`, replicaId: 'a', keyPrefix: 'mr' });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix: 'mr' });
  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 1 }));
  proxy.cut();
  await waitFor(() => !a.store.health().redisUp, { ...WAIT, message: 'A never noticed it was cut off' });
  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 2 }));
  const newer = inputOf('east', { epoch: 'e', generation: 9, services: ['newer'] });
  await b.store.putInput(newer);

  proxy.restore();
  await waitFor(() => a.store.health().redisUp && a.store.health().pendingWriteBack === 0, {
    ...WAIT,
    message: 'A never wrote back',
  });
  const redis = plainClientFor(t, server.url);
  assert.equal((await decodeInputParts(await redis.hgetall('mr:input-parts:east'), 'east')).snapshot.hash, newer.hash);
  assert.equal((await a.store.getInput('east'))?.hash, newer.hash);
});

test('redis outage: given A was cut off holding an input, when B stored a new epoch meanwhile, then A takes it on reconnect and is told', async (t) => {
  const server = await redisServerFor(t);
  const proxy = await startTcpProxyFor(t, server.port);
  const a = await readyRedisStoreFor(t, { url: `redis://127.0.0.1:${proxy.port}`, replicaId: 'a', keyPrefix: 'mr' });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix: 'mr' });
  await a.store.putInput(inputOf('east', { epoch: 'old', generation: 30 }));
  const events: InputChangedEvent[] = [];
  a.store.onInputChanged((event) => events.push(event));
  proxy.cut();
  await waitFor(() => !a.store.health().redisUp, { ...WAIT, message: 'A never noticed it was cut off' });
  const restarted = inputOf('east', { epoch: 'new', generation: 1, services: ['after-restart'] });
  await b.store.putInput(restarted);

  proxy.restore();
  await waitFor(() => events.length > 0, { ...WAIT, message: 'A was never told of the missed change' });
  assert.deepEqual(events[0], { cluster: 'east', hash: restarted.hash, replica: 'b', deleted: false });
  assert.equal(a.store.memoryInputs().get('east')?.hash, restarted.hash);
});

/** Bytes Redis has received on all connections so far (INFO stats). */
async function bytesIntoRedis(redis: ReturnType<typeof plainClientFor>): Promise<number> {
  const info = await redis.info('stats');
  return Number(/total_net_input_bytes:(\d+)/.exec(info)?.[1]);
}

test('redis outage: given one put that did not reach Redis, when memory is written back, then what Redis already holds is not sent again', async (t) => {
  const server = await redisServerFor(t);
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
  const names = Array.from({ length: 400 }, (_, i) => `svc-${i}`);
  const big = (cluster: string) => inputOf(cluster, { services: names.map((n) => `${cluster}-${n}`) });
  for (const cluster of ['east', 'west']) {
    await store.putInput(big(cluster));
    await store.putOutput(outputOf(cluster, [big(cluster)]));
  }
  const redis = plainClientFor(t, server.url);
  const before = await bytesIntoRedis(redis);
  server.pause();
  await store.putInput(inputOf('north'));
  assert.equal(store.health().pendingWriteBack, 1);

  server.resume();
  await waitFor(() => store.health().pendingWriteBack === 0, { ...WAIT, message: 'the input was never written back' });
  const sent = (await bytesIntoRedis(redis)) - before;
  assert.ok(
    sent < big('east').bytes,
    `${sent} bytes went to Redis for one small input; each held input is ${big('east').bytes} bytes`,
  );
  assert.equal(
    (await decodeInputParts(await redis.hgetall('mr:input-parts:north'), 'north')).snapshot.hash,
    inputOf('north').hash,
  );
});
