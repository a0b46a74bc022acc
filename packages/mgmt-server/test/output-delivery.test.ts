// Outputs reach the OutputHub (and so the agents) before and regardless of the Redis write.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { buildInputSnapshot, type Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { service, virtualDestination } from './harness.ts';
import { translationSetup as setUp } from './translation-setup.ts';

const translationSetup = (t: TestContext) => setUp(t, { keyPrefix: 'delivery', commandTimeoutMs: 1000 });

test('given a frozen Redis, when translation publishes outputs, then every output reaches the hub while its Redis write is still pending', async (t) => {
  const { redis, registry, store, outputs, metrics, loop } = await translationSetup(t);
  const plain = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  plain.on('error', () => undefined);
  t.after(() => plain.disconnect());
  await registry.register('a', {});
  await registry.register('b', {});
  let generation = 0;
  const put = (cluster: string, resources: Resource[]) =>
    store.putInput(buildInputSnapshot({ cluster, epoch: 'e', generation: ++generation, resources }));
  await put('a', [service('reviews'), virtualDestination('reviews')]);
  await put('b', [service('ratings')]);

  redis.pause();
  t.after(() => redis.resume());
  const events: string[] = [];
  for (const cluster of ['a', 'b']) outputs.subscribe(cluster, (o) => events.push(`published ${o.cluster}`));
  store.onHealthChange((h) => events.push(`redis write failed, pending ${h.pendingWriteBack}`));
  await loop.runNow();

  assert.deepEqual(events.slice(0, 2).sort(), ['published a', 'published b'], `events in order: ${events.join(', ')}`);
  await waitFor(() => store.health().pendingWriteBack === 2, {
    timeoutMs: 5000,
    message: 'the frozen Redis never failed the writes',
  });
  const failures = await metrics.registry.getSingleMetricAsString('meshrelay_output_store_write_failures_total');
  assert.match(failures, /cluster="a"[^\n]* 1/);

  redis.resume();
  for (const cluster of ['a', 'b']) {
    const hash = outputs.current(cluster)?.hash;
    await waitFor(async () => (await plain.hget(`delivery:output-parts:${cluster}`, '#hash')) === hash, {
      timeoutMs: 10_000,
      message: `the write-back never stored the output of ${cluster}`,
    });
  }
});

test("given a frozen Redis, when a cluster's output changes several times, then only the newest waits behind the write in flight", async (t) => {
  const { redis, registry, store, outputs, persister, loop } = await translationSetup(t);
  await registry.register('a', {});
  let generation = 0;
  const put = (names: string[]) =>
    store.putInput(
      buildInputSnapshot({
        cluster: 'a',
        epoch: 'e',
        generation: ++generation,
        resources: names.flatMap((n) => [service(n), virtualDestination(n)]),
      }),
    );
  await put(['one']);
  redis.pause();
  t.after(() => redis.resume());

  const published: string[] = [];
  outputs.subscribe('a', (o) => published.push(o.hash));
  for (const names of [
    ['one', 'two'],
    ['one', 'two', 'three'],
    ['one', 'two', 'three', 'four'],
  ]) {
    void put(names); // memory takes it at once; its own Redis write waits on the frozen server
    await loop.runNow();
  }

  assert.equal(published.length, 3, 'every change was delivered at once');
  assert.equal(persister.size(), 2, 'one write in flight and the newest output waiting, nothing in between');
  redis.resume();
  await persister.idle();
  await waitFor(() => store.health().pendingWriteBack === 0, {
    timeoutMs: 10_000,
    message: 'the write-back never finished',
  });
  assert.equal((await store.getOutput('a'))?.hash, published.at(-1));
});
