import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  buildInputSnapshot,
  buildOutputSnapshot,
  canonicalEncodingCount,
  canonicalObjectEncodeCount,
  isCanonicalResource,
  snapshotEncoding,
  type Resource,
} from '@meshrelay/api';
import { startRedisServer, type RedisServerHandle } from '@meshrelay/testkit';
import { readyRedisStoreFor, uniquePrefix } from './redis-harness.ts';

// One redis-server for this file; every test uses its own key prefix.
let server: RedisServerHandle;
before(async () => {
  server = await startRedisServer();
});
after(() => server.stop());

/** A ServiceEntry far above the size of parts the encoding cache keeps on its own (8 KiB). */
function largeServiceEntry(name: string, endpoints: number): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'istio-system' },
    spec: {
      hosts: [`${name}.mesh.internal`],
      endpoints: Array.from({ length: endpoints }, (_, i) => ({
        address: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        labels: { app: name },
        locality: 'eu/eu-1a',
      })),
    },
  } as Resource;
}

test('redis store: given an output holding large resources, when it is put, then no resource is encoded again and another replica reads it back', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const output = buildOutputSnapshot({
    cluster: 'east',
    resources: [largeServiceEntry('a', 400), largeServiceEntry('b', 400)],
    provenance: [{ cluster: 'east', inputHash: 'h' }],
  });

  const encodesBefore = canonicalObjectEncodeCount();
  await a.store.putOutput(output);
  assert.equal(canonicalObjectEncodeCount() - encodesBefore, 0);
  assert.deepEqual(await b.store.getOutput('east'), output);
});

test('redis store: given an input holding large resources, when it is put, then no resource is encoded again and another replica reads it back', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });
  const input = buildInputSnapshot({
    cluster: 'east',
    epoch: 'e1',
    generation: 1,
    resources: [largeServiceEntry('a', 400)],
  });

  const encodesBefore = canonicalObjectEncodeCount();
  await a.store.putInput(input);
  assert.equal(canonicalObjectEncodeCount() - encodesBefore, 0);
  assert.deepEqual(await b.store.getInput('east'), input);
});

test('redis store: given an input in Redis, when another replica reads it, then it takes the stored canonical text as it is (nothing copied or encoded) and gets the same snapshot', async (t) => {
  const keyPrefix = uniquePrefix();
  const a = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix });
  const input = buildInputSnapshot({
    cluster: 'east',
    epoch: 'e1',
    generation: 1,
    resources: [largeServiceEntry('a', 300), largeServiceEntry('b', 300)],
  });
  await a.store.putInput(input);
  const b = await readyRedisStoreFor(t, { url: server.url, replicaId: 'b', keyPrefix });

  const [copies, encodes] = [canonicalEncodingCount(), canonicalObjectEncodeCount()];
  const read = await b.store.getInput('east');

  assert.deepEqual(
    [canonicalEncodingCount() - copies, canonicalObjectEncodeCount() - encodes],
    [0, 0],
    'no resource copied or encoded',
  );
  assert.deepEqual(read, input);
  assert.ok(
    read !== undefined && read.resources.every((r) => Object.isFrozen(r) && isCanonicalResource(r)),
    'each resource is a frozen canonical one',
  );
  assert.equal(snapshotEncoding(read), snapshotEncoding(input));
});
