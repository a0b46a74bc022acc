import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMemorySnapshotStore } from '../src/index.ts';
import { runSnapshotStoreContract } from './store-contract.ts';

runSnapshotStoreContract('memory store', (t) => {
  const store = createMemorySnapshotStore();
  t.after(() => store.close());
  return Promise.resolve(store);
});

test('memory store: given a new store, when health is read, then it reports the memory backend with no Redis', () => {
  assert.deepEqual(createMemorySnapshotStore().health(), { backend: 'memory', redisUp: false, pendingWriteBack: 0 });
});
