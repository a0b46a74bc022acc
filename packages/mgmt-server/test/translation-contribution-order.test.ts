// DESIGN §13's kept contributions are written behind delivery: an agent never waits for them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import { buildEndpointSlice, buildService, waitFor } from '@meshrelay/testkit';
import { HeldDocuments } from './held-documents.ts';
import { translationSetup } from './translation-setup.ts';

test('given the kept-contribution write is slow, when an input changes, then its output is published before that write completes', { timeout: 60_000 }, async (t) => {
  let documents: HeldDocuments | undefined;
  const { registry, store, outputs, loop } = await translationSetup(t, {
    keyPrefix: 'contribution-order', commandTimeoutMs: 5000,
    contributionDocuments: (dir) => (documents = new HeldDocuments(dir)),
  });
  await registry.register('c0', {});
  const ports = [{ name: 'http', port: 8080 }];
  await store.putInput(buildInputSnapshot({
    cluster: 'c0', epoch: 'e', generation: 1,
    resources: [buildService({ name: 'svc', namespace: 'ns', ports }), buildEndpointSlice({ service: 'svc', namespace: 'ns', ports, endpoints: [{ ip: '10.0.0.1' }] })],
  }));

  const held = documents as HeldDocuments;
  loop.start();
  // Released on failure too, so the loop (stopped in t.after) is not left waiting on the write.
  await waitFor(() => outputs.current('c0') !== undefined, { timeoutMs: 10_000, message: 'the output was not published while the contribution write was held' })
    .finally(() => setTimeout(() => held.release(), 0));

  await waitFor(() => held.started.includes('c0'), { timeoutMs: 5000, message: 'the contribution was never written' });
  await loop.stop();
  assert.notEqual(await held.get('c0'), undefined);
});

test('given the kept-contribution write of one run is held, when the input changes again, then the next run publishes its output without waiting for that write', { timeout: 60_000 }, async (t) => {
  let documents: HeldDocuments | undefined;
  const { registry, store, loop } = await translationSetup(t, {
    keyPrefix: 'contribution-next-run', commandTimeoutMs: 5000,
    contributionDocuments: (dir) => (documents = new HeldDocuments(dir)),
  });
  await registry.register('c0', {});
  const ports = [{ name: 'http', port: 8080 }];
  const inputWith = (generation: number, ip: string) => buildInputSnapshot({
    cluster: 'c0', epoch: 'e', generation,
    resources: [buildService({ name: 'svc', namespace: 'ns', ports }), buildEndpointSlice({ service: 'svc', namespace: 'ns', ports, endpoints: [{ ip }] })],
  });
  await store.putInput(inputWith(1, '10.0.0.1'));
  const held = documents as HeldDocuments;
  const second = inputWith(2, '10.0.0.2');
  const admittedHash = () => loop.status().admitted.find((a) => a.cluster === 'c0')?.inputHash;
  loop.start();
  try {
    await waitFor(() => admittedHash() !== undefined && held.started.includes('c0'), { timeoutMs: 10_000, message: 'the first run never translated, or its contribution write never started' });
    await store.putInput(second);
    loop.trigger('test: the input changed');
    await waitFor(() => admittedHash() === second.hash, { timeoutMs: 10_000, message: 'the second run waited for the held contribution write' });
    assert.deepEqual(held.started, ['c0'], 'the first write is still held');
  } finally {
    // Released here, not in t.after: the loop (stopped in t.after) waits for the writes it queued.
    held.release();
  }
  await loop.stop();
  const kept = JSON.parse(String(await held.get('c0'))) as { generation: number; hash: string };
  assert.equal(kept.hash, second.hash, 'once released, the latest input is the one kept');
  assert.deepEqual(held.started, ['c0', 'c0'], 'the first input, then only the latest');
});
