import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { after, before, test, type TestContext } from 'node:test';
import { buildOutputSnapshot } from '@meshrelay/api';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import { createRedisSnapshotStore, type InputChangedEvent } from '../src/index.ts';
import { encodeInput } from '../src/redis-codec.ts';
import { capturingLogger, inputOf, outputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, uniquePrefix } from './redis-harness.ts';
import { runSnapshotStoreContract } from './store-contract.ts';

// One redis-server for this file; every test uses its own key prefix.
let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

runSnapshotStoreContract('redis store', async (t) => {
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'r1', keyPrefix: uniquePrefix() });
  return store;
});

test('redis store: given a reachable Redis, when health is read, then it reports the redis backend up', async (t) => {
  const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'r1', keyPrefix: uniquePrefix() });
  assert.deepEqual(store.health(), { backend: 'redis', redisUp: true, pendingWriteBack: 0 });
});

test('redis store: given replica A put an input, when replica B reads it, then B gets an equal snapshot', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const snapshot = inputOf('east', { epoch: 'e-7', generation: 12, services: ['x', 'y'] });
  await a.store.putInput(snapshot);

  const read = await b.store.getInput('east');
  assert.deepEqual(read, snapshot);
  assert.ok(Object.isFrozen(read));
  assert.equal(b.store.memoryInputs().get('east'), read, 'B keeps what it read in memory');
});

test('redis store: given replica A put an output, when replica B reads it, then B gets it with its provenance', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const output = outputOf('east', [inputOf('east'), inputOf('west')]);
  await a.store.putOutput(output);
  assert.deepEqual(await b.store.getOutput('east'), output);
});

test('redis store: given an output whose provenance carries order and a stale mark, when B reads it, then both survive', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const east = inputOf('east', { epoch: 'e-1', generation: 4 });
  const west = inputOf('west', { epoch: 'w-1', generation: 9 });
  const output = buildOutputSnapshot({
    cluster: 'east',
    resources: [],
    provenance: [
      { cluster: 'east', inputHash: east.hash, epoch: 'e-1', generation: 4 },
      { cluster: 'west', inputHash: west.hash, stale: true, epoch: 'w-1', generation: 9 },
    ],
  });
  await a.store.putOutput(output);
  assert.deepEqual((await b.store.getOutput('east'))?.provenance, output.provenance);
});

test('redis store: given inputs put by A, when B loads several names, then B gets the ones Redis holds', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  await a.store.putInput(inputOf('east'));
  await a.store.putInput(inputOf('west'));
  await b.store.putInput(inputOf('north'));
  const loaded = await b.store.loadInputs(['east', 'west', 'north', 'south']);
  assert.deepEqual([...loaded.keys()].sort(), ['east', 'north', 'west']);
});

test('redis store: given several inputs in Redis, when B loads them, then every value comes in a reply of its own (no reply carries them all)', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  for (const cluster of ['east', 'west', 'north']) await a.store.putInput(inputOf(cluster));
  // B starts after the puts, so no change message makes it read anything on its own.
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const plain = plainClientFor(t, server.url);
  await plain.config('RESETSTAT');

  const loaded = await b.store.loadInputs(['east', 'west', 'north']);

  assert.deepEqual([...loaded.keys()].sort(), ['east', 'north', 'west']);
  // At scale one value is MiBs: a single MGET of all of them outlasts the command timeout.
  const stats = await plain.info('commandstats');
  assert.doesNotMatch(stats, /cmdstat_mget:/, 'no multi-key read');
  assert.match(stats, /cmdstat_get:calls=3,/);
});

test('redis store: given two replicas listening, when each puts an input, then only the other replica is told', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const seenByA: InputChangedEvent[] = [];
  const seenByB: InputChangedEvent[] = [];
  a.store.onInputChanged((event) => seenByA.push(event));
  b.store.onInputChanged((event) => seenByB.push(event));
  await waitForSubscribers(t, keyPrefix, 2);

  const east = inputOf('east');
  await a.store.putInput(east);
  await waitFor(() => seenByB.length === 1, { timeoutMs: 5000, message: 'B never heard of east' });
  const west = inputOf('west');
  await b.store.putInput(west);
  // Pub/sub keeps publish order: once A hears of west, it would already have heard of its own east.
  await waitFor(() => seenByA.length === 1, { timeoutMs: 5000, message: 'A never heard of west' });

  assert.deepEqual(seenByB, [
    { cluster: 'east', hash: east.hash, replica: 'a', deleted: false, epoch: 'epoch-1', generation: 1 },
  ]);
  assert.deepEqual(seenByA, [
    { cluster: 'west', hash: west.hash, replica: 'b', deleted: false, epoch: 'epoch-1', generation: 1 },
  ]);
});

test('redis store: given B holds an older input, when A puts a newer one, then B has the newer one by the time it is told', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const generations: (number | undefined)[] = [];
  b.store.onInputChanged((event) => generations.push(b.store.memoryInputs().get(event.cluster)?.generation));
  await waitForSubscribers(t, keyPrefix, 2);
  await a.store.putInput(inputOf('east', { generation: 1 }));
  await waitFor(() => generations.length === 1, { timeoutMs: 5000, message: 'B was never told of generation 1' });

  await a.store.putInput(inputOf('east', { generation: 2, services: ['moved'] }));
  await waitFor(() => generations.length === 2, { timeoutMs: 5000, message: 'B was never told of generation 2' });
  assert.deepEqual(generations, [1, 2]);
  assert.equal((await b.store.getInput('east'))?.generation, 2);
});

test('redis store: given B holds an input, when A puts the same content from a restarted agent (new epoch), then B holds the new epoch by the time it is told', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const told: (string | undefined)[] = [];
  b.store.onInputChanged((event) => told.push(b.store.memoryInputs().get(event.cluster)?.epoch));
  await waitForSubscribers(t, keyPrefix, 2);
  const before = inputOf('east', { epoch: 'agent-start-1', generation: 7 });
  await a.store.putInput(before);
  await waitFor(() => told.length === 1, { timeoutMs: 5000, message: 'B was never told of the first epoch' });

  const restarted = inputOf('east', { epoch: 'agent-start-2', generation: 1 });
  await a.store.putInput(restarted);
  await waitFor(() => told.length === 2, { timeoutMs: 5000, message: 'B was never told of the second epoch' });

  assert.equal(restarted.hash, before.hash, 'the same content');
  assert.deepEqual(told, ['agent-start-1', 'agent-start-2']);
  const held = b.store.memoryInputs().get('east');
  assert.deepEqual({ epoch: held?.epoch, generation: held?.generation }, { epoch: 'agent-start-2', generation: 1 });
});

test('redis store: given B holds an input, when A deletes it, then B drops it and is told', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const events: InputChangedEvent[] = [];
  b.store.onInputChanged((event) => events.push(event));
  await waitForSubscribers(t, keyPrefix, 2);
  await a.store.putInput(inputOf('east'));
  await waitFor(() => events.length === 1, { timeoutMs: 5000, message: 'B was never told of the put' });
  assert.ok(b.store.memoryInputs().has('east'));

  await a.store.deleteInput('east');
  await waitFor(() => events.length === 2, { timeoutMs: 5000, message: 'B was never told of the delete' });
  assert.deepEqual(events[1], { cluster: 'east', hash: '', replica: 'a', deleted: true });
  assert.equal(b.store.memoryInputs().has('east'), false);
  assert.equal(await b.store.getInput('east'), undefined);
});

test('redis store: given memory holds generation 3, when Redis announces generation 2 of the same epoch, then memory keeps 3', async (t) => {
  const keyPrefix = uniquePrefix();
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const redis = plainClientFor(t, server.url);
  const held = inputOf('east', { epoch: 'e', generation: 3 });
  await b.store.putInput(held);
  const events: InputChangedEvent[] = [];
  b.store.onInputChanged((event) => events.push(event));
  await waitForSubscribers(t, keyPrefix, 1);

  const older = inputOf('east', { epoch: 'e', generation: 2, services: ['older'] });
  await redis.set(`${keyPrefix}:input:east`, await encodeInput(older, 'c'));
  await redis.publish(
    `${keyPrefix}:input-changed`,
    JSON.stringify({ cluster: 'east', hash: older.hash, replica: 'c', deleted: false }),
  );
  await waitFor(() => events.length === 1, { timeoutMs: 5000, message: 'B was never told' });

  assert.equal((await b.store.getInput('east'))?.hash, held.hash);
});

test('redis store: given Redis holds generation 3, when A puts generation 2 of the same epoch, then Redis keeps 3 and A takes it', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const newer = inputOf('east', { epoch: 'e', generation: 3, services: ['newer'] });
  await b.store.putInput(newer);

  await a.store.putInput(inputOf('east', { epoch: 'e', generation: 2, services: ['older'] }));
  assert.equal((await a.store.getInput('east'))?.hash, newer.hash);
  const c = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.equal((await c.store.getInput('east'))?.hash, newer.hash);
});

test('redis store: given Redis holds another epoch, when A puts a lower generation of a new epoch, then Redis takes it', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  await a.store.putInput(inputOf('east', { epoch: 'before-restart', generation: 40 }));
  const restarted = inputOf('east', { epoch: 'after-restart', generation: 1, services: ['fresh'] });
  await a.store.putInput(restarted);
  const c = await readyRedisStoreFor(t, { url: server.url, replicaId: 'c', keyPrefix });
  assert.equal((await c.store.getInput('east'))?.hash, restarted.hash);
});

for (const [corruption, field, damage] of [
  ['whose header is not JSON', '#header', (_value: string) => '{"format":2,"cluster":"east",'],
  [
    'whose resources were edited after hashing',
    'r:Service.v1 default/east-svc',
    (value: string) => value.replace('"port":80', '"port":81'),
  ],
  ['that names another cluster', '#header', (value: string) => value.replace('"cluster":"east"', '"cluster":"west"')],
] as const) {
  test(`redis store: given a Redis value ${corruption}, when another replica reads it, then it is absent, logged, and the writer keeps its memory copy`, async (t) => {
    const keyPrefix = uniquePrefix();
    const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
    const redis = plainClientFor(t, server.url);
    const snapshot = inputOf('east');
    await a.store.putInput(snapshot);
    const key = `${keyPrefix}:input-parts:east`;
    const stored = await redis.hget(key, field);
    assert.ok(stored !== null);
    const damaged = damage(stored);
    assert.notEqual(damaged, stored);
    await redis.hset(key, field, damaged);

    const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
    assert.equal(await b.store.getInput('east'), undefined);
    assert.equal(b.store.memoryInputs().has('east'), false);
    assert.ok(
      b.records.some(
        (r) => r.level === 40 && r.msg === 'ignoring an unreadable snapshot in redis' && r.cluster === 'east',
      ),
    );
    assert.equal((await a.store.getInput('east'))?.hash, snapshot.hash);
  });
}

test('redis store: given a corrupt Redis value, when a replica puts that cluster again, then the value is replaced', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const redis = plainClientFor(t, server.url);
  await redis.set(`${keyPrefix}:input:east`, 'garbage');
  const snapshot = inputOf('east', { generation: 1 });
  await a.store.putInput(snapshot);
  assert.equal((await b.store.getInput('east'))?.hash, snapshot.hash);
});

/** `count` subscribers listen on the prefix's change channel, so a publish from now on reaches them all. */
async function waitForSubscribers(t: TestContext, keyPrefix: string, count: number): Promise<void> {
  const redis = plainClientFor(t, server.url);
  await waitFor(async () => (await redis.pubsub('NUMSUB', `${keyPrefix}:input-changed`))[1] === count, {
    timeoutMs: 5000,
    message: `fewer than ${count} replicas subscribed`,
  });
}

test('redis store: given a load reading several clusters, when one of them is put while an earlier one is read, then the load returns the put snapshot itself and memory keeps it', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  await a.store.putInput(inputOf('east'));
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const west = inputOf('west', { epoch: 'w-2', generation: 3 });

  // B reads east first; west's put and its Redis write go out on B's connection before west is read.
  const loading = b.store.loadInputs(['east', 'west']);
  const putting = b.store.putInput(west);
  const [loaded] = await Promise.all([loading, putting]);

  assert.equal(loaded.get('west'), west, 'the put snapshot, not a copy read back from Redis');
  assert.equal(b.store.memoryInputs().get('west'), west, 'memory keeps the put snapshot');
  assert.deepEqual(loaded.get('east'), await a.store.getInput('east'));
});

test('redis store: given a store that connected and wrote, when it is closed, then no timer of its holds the process open', async () => {
  // Every timer created while the store lives, until it fires or is cleared.
  const timers = new Map<number, NodeJS.Timeout>();
  const hook = createHook({
    init: (id, type, _trigger, resource) => {
      if (type === 'Timeout') timers.set(id, resource as NodeJS.Timeout);
    },
    destroy: (id) => timers.delete(id),
  }).enable();
  const { logger } = capturingLogger();
  // A long command timeout, so a timer left armed would still be there when looked at.
  const store = createRedisSnapshotStore({
    url: server.url,
    replicaId: 'r1',
    keyPrefix: uniquePrefix(),
    logger,
    commandTimeoutMs: 60_000,
    maxReconnectDelayMs: 100,
    writeBackRetryMs: 200,
  });
  await waitFor(() => store.health().redisUp, { timeoutMs: 5000, message: 'the store never saw Redis up' });
  await store.putInput(inputOf('east', { epoch: 'e-1', generation: 1, services: ['x'] }));
  await store.close();
  hook.disable();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const armed = (timer: NodeJS.Timeout) => !(timer as unknown as { _destroyed: boolean })._destroyed;
  const holding = [...timers.values()].filter((timer) => armed(timer) && timer.hasRef());
  assert.deepEqual(
    holding.map((timer) => String((timer as unknown as { _onTimeout: unknown })._onTimeout).slice(0, 120)),
    [],
    'timers still armed after close',
  );
});
