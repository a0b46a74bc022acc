// The store names a held input's epoch, generation and hash without reading the value (what a
// resuming agent is answered from), and never guesses when the version cannot be trusted.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import { startRedisServer, type RedisServerHandle } from '@meshrelay/testkit';
import { formatInputVersion, versionOfInput } from '../src/input-version.ts';
import { inputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, uniquePrefix } from './redis-harness.ts';

let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

const input = inputOf('east', { epoch: 'e-1', generation: 7, services: ['a', 'b', 'c'] });

/** A put by one replica, and a second replica started after it (nothing in its memory). */
async function putThenFresh(t: TestContext) {
  const keyPrefix = uniquePrefix();
  const writer = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  await writer.store.putInput(input);
  const fresh = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  return { keyPrefix, fresh: fresh.store, redis: plainClientFor(t, server.url) };
}

test('input version: given an input put by another replica, when a fresh store asks for its version, then Redis answers epoch, generation, hash and size without the value being read', async (t) => {
  const { keyPrefix, fresh, redis } = await putThenFresh(t);
  // A value the store could not decode: only the version key can have answered.
  await redis.hset(`${keyPrefix}:input-parts:east`, '#header', 'not a snapshot');
  assert.deepEqual(await fresh.inputVersion('east'), versionOfInput(input));
  assert.equal(fresh.memoryInputs().has('east'), false, 'nothing was read into memory');
});

test('input version: given a version written before versions named their hash, when asked, then the store answers none', async (t) => {
  const { keyPrefix, fresh, redis } = await putThenFresh(t);
  await redis.hdel(`${keyPrefix}:input-version:east`, 'resume');
  assert.equal(await fresh.inputVersion('east'), undefined);
});

test('input version: given a version whose hash names another generation than its fields (an older writer moved them on), when asked, then the store answers none', async (t) => {
  const { keyPrefix, fresh, redis } = await putThenFresh(t);
  await redis.hset(`${keyPrefix}:input-version:east`, { generation: '8' });
  assert.equal(await fresh.inputVersion('east'), undefined);
});

test('input version: given an unreadable hash field, when asked, then the store answers none', async (t) => {
  const { keyPrefix, fresh, redis } = await putThenFresh(t);
  await redis.hset(`${keyPrefix}:input-version:east`, {
    resume: formatInputVersion(input).replace(input.hash, 'not-a-hash'),
  });
  assert.equal(await fresh.inputVersion('east'), undefined);
});

test('input version: given a version whose value was evicted, when asked, then the store answers none', async (t) => {
  const { keyPrefix, fresh, redis } = await putThenFresh(t);
  await redis.del(`${keyPrefix}:input-parts:east`);
  assert.equal(await fresh.inputVersion('east'), undefined);
});

test('input version: given a newer input in memory, when asked, then memory answers before Redis', async (t) => {
  const { fresh } = await putThenFresh(t);
  const newer = inputOf('east', { epoch: 'e-1', generation: 9, services: ['d'] });
  await fresh.putInput(newer);
  assert.deepEqual(await fresh.inputVersion('east'), versionOfInput(newer));
});
