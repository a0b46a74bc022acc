import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, snapshotEncoding, type Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import type { AppliedOutput } from '../src/apply/output-writer.ts';
import type { ReceivedOutput } from '../src/relay/pull-stream.ts';
import { logged, service, startClient, startRelay, type RelayUnderTest } from './support/relay-harness.ts';

/** Sum of relay_snapshot_bytes_total for east in one direction and kind. */
async function snapshotBytes(
  relay: RelayUnderTest,
  direction: 'push' | 'pull',
  kind: 'full' | 'delta',
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${relay.server.metricsPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('relay_snapshot_bytes_total{') &&
        l.includes('cluster="east"') &&
        l.includes(`direction="${direction}"`) &&
        l.includes(`kind="${kind}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `svc-${i}`);
const services = (n: number, changed?: string): Resource[] =>
  names(n).map((name) => service(name, name === changed ? 9999 : 9080));
/** Pull tests push no input, so no translation of the agent's own cluster races the outputs they publish. */
const NO_INPUT = { latestSnapshot: () => undefined };
const input = (generation: number, resources: Resource[]) =>
  buildInputSnapshot({ cluster: 'east', epoch: 'epoch-1', generation, resources });

test('given an agent whose snapshot the server accepted, when one resource changes, then it pushes a delta far smaller than the full snapshot and the server ends equal', async (t) => {
  const relay = await startRelay(t);
  const harness = await startClient(t, [relay]);
  harness.setLatest(input(2, services(300)));
  await waitFor(() => harness.acks.at(-1)?.generation === 2, { timeoutMs: 10_000 });
  const full = await snapshotBytes(relay, 'push', 'full');
  const next = input(3, services(300, 'svc-42'));
  harness.setLatest(next);
  await waitFor(() => relay.stored.at(-1)?.generation === 3, { timeoutMs: 10_000 });
  assert.equal(relay.stored.at(-1)?.hash, next.hash);
  assert.equal(snapshotEncoding(relay.stored.at(-1) as typeof next), snapshotEncoding(next));
  const delta = await snapshotBytes(relay, 'push', 'delta');
  assert.equal(await snapshotBytes(relay, 'push', 'full'), full, 'the change did not go full');
  assert.ok(delta > 0 && delta * 20 < next.bytes, `delta ${delta} bytes against a full snapshot of ${next.bytes}`);
});

test('given an agent that applied an output, when one resource of the output changes, then the server sends a delta far smaller than the full output and the agent ends equal', async (t) => {
  const relay = await startRelay(t);
  relay.publish(services(300));
  const harness = await startClient(t, [relay], NO_INPUT);
  await waitFor(
    () => harness.applied.length === 1 && relay.server.connections.applied('east') === harness.applied[0]?.hash,
    { timeoutMs: 10_000 },
  );
  const next = relay.publish(services(300, 'svc-7'));
  await waitFor(() => relay.server.connections.applied('east') === next.hash, { timeoutMs: 10_000 });
  assert.equal(harness.applied.length, 2);
  assert.equal(snapshotEncoding(harness.applied[1] ?? { resources: [] }), snapshotEncoding(next));
  const delta = await snapshotBytes(relay, 'pull', 'delta');
  assert.ok(delta > 0 && delta * 20 < next.bytes, `delta ${delta} bytes against a full output of ${next.bytes}`);
});

test('given an unchanged output published again, when the agent holds it, then nothing is sent', async (t) => {
  const relay = await startRelay(t);
  const first = relay.publish(services(20));
  const harness = await startClient(t, [relay], NO_INPUT);
  await waitFor(() => relay.server.connections.applied('east') === first.hash, { timeoutMs: 10_000 });
  const before = [await snapshotBytes(relay, 'pull', 'full'), await snapshotBytes(relay, 'pull', 'delta')];
  relay.publish(services(20));
  const marker = relay.publish(services(20, 'svc-1'));
  await waitFor(() => relay.server.connections.applied('east') === marker.hash, { timeoutMs: 10_000 });
  assert.equal(harness.applied.length, 2, 'the same output was not applied again');
  assert.equal(await snapshotBytes(relay, 'pull', 'full'), before[0]);
  assert.ok((await snapshotBytes(relay, 'pull', 'delta')) > (before[1] ?? 0));
});

test('given an agent whose held output differs from what it acked, when a delta arrives, then it refuses it with MESHRELAY_ERR_DELTA_BASE_MISMATCH and the server resends the output full', async (t) => {
  const relay = await startRelay(t);
  const first = relay.publish(services(100));
  let held: AppliedOutput | undefined;
  const harness = await startClient(t, [relay], {
    ...NO_INPUT,
    heldOutput: () => held,
    // The local copy is lost after the first apply (as if the persisted output were replaced under the agent).
    applyOutput: (output) => {
      held =
        output.hash === first.hash
          ? { cluster: 'east', hash: '', provenance: [], resources: [] }
          : { cluster: 'east', ...output };
      return Promise.resolve();
    },
  });
  await waitFor(() => relay.server.connections.applied('east') === first.hash, { timeoutMs: 10_000 });
  const fullBefore = await snapshotBytes(relay, 'pull', 'full');
  const next = relay.publish(services(100, 'svc-3'));
  await waitFor(() => relay.server.connections.applied('east') === next.hash, { timeoutMs: 10_000 });
  assert.ok(logged(harness.lines, /^output refused: MESHRELAY_ERR_DELTA_BASE_MISMATCH/));
  assert.ok((await snapshotBytes(relay, 'pull', 'delta')) > 0, 'a delta was tried first');
  assert.ok((await snapshotBytes(relay, 'pull', 'full')) > fullBefore, 'then the output went full');
  assert.equal(held?.hash, next.hash);
  assert.equal(snapshotEncoding(held as AppliedOutput), snapshotEncoding(next));
});

test('given a delta the server cannot reproduce, when it NACKs it with MESHRELAY_ERR_DELTA_BASE_MISMATCH, then the agent sends the same snapshot full next', async (t) => {
  const relay = await startRelay(t);
  const harness = await startClient(t, [relay]);
  harness.setLatest(input(2, services(300)));
  await waitFor(() => harness.acks.at(-1)?.generation === 2, { timeoutMs: 10_000 });
  const fullBefore = await snapshotBytes(relay, 'push', 'full');
  // A snapshot whose announced hash is not its content's: the delta's result cannot match it on the server.
  const real = input(3, services(300, 'svc-9'));
  harness.setLatest({ ...real, hash: 'c'.repeat(64) });
  await waitFor(() => harness.acks.at(-1)?.generation === 3, { timeoutMs: 10_000 });
  assert.ok((await snapshotBytes(relay, 'push', 'delta')) > 0, 'a delta was tried first');
  assert.ok((await snapshotBytes(relay, 'push', 'full')) > fullBefore, 'then the snapshot went full');
  assert.ok(logged(harness.lines, /^server does not hold the delta base; resending the snapshot full$/));
  // The full one is refused on its own merits, and only that refusal reaches the agent's status.
  assert.equal(harness.acks.at(-1)?.errorCode, 'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH');
  assert.equal(harness.acks.filter((a) => a.errorCode === 'MESHRELAY_ERR_DELTA_BASE_MISMATCH').length, 0);
});

test('given an agent that received a full output and then a delta, when each arrives, then onOutputReceived reports its kind and the bytes the server counted for it', async (t) => {
  const relay = await startRelay(t);
  const received: ReceivedOutput[] = [];
  relay.publish(services(300));
  await startClient(t, [relay], { ...NO_INPUT, events: { onOutputReceived: (r) => void received.push(r) } });
  await waitFor(() => received.length === 1, { timeoutMs: 10_000 });
  const next = relay.publish(services(300, 'svc-5'));
  await waitFor(() => relay.server.connections.applied('east') === next.hash, { timeoutMs: 10_000 });
  assert.deepEqual(
    received.map((r) => r.kind),
    ['full', 'delta'],
  );
  assert.equal(received[1]?.hash, next.hash);
  assert.equal(received[0]?.wireBytes, await snapshotBytes(relay, 'pull', 'full'));
  assert.equal(received[1]?.wireBytes, await snapshotBytes(relay, 'pull', 'delta'));
});

/**
 * An exported service's ServiceEntry with 10 endpoints in each of 50 clusters; `gone` names an endpoint that is not
 * there.
 */
function serviceEntry(gone = -1): Resource {
  const endpoints = Array.from({ length: 500 }, (_, i) => ({
    address: `10.${Math.floor(i / 10)}.0.${(i % 10) + 1}`,
    labels: { app: 'reviews' },
    network: `net-${Math.floor(i / 10)}`,
    ports: { http: 15443 },
  }));
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'vd-reviews', namespace: 'istio-system' },
    spec: { hosts: ['reviews.global'], resolution: 'STATIC', endpoints: endpoints.filter((_, i) => i !== gone) },
  };
}

/** One provenance entry per cluster; `changed` has a newer input. */
const provenanceOf = (changed = -1) =>
  Array.from({ length: 50 }, (_, i) => ({
    cluster: `c-${String(i).padStart(2, '0')}`,
    inputHash: (i === changed ? 'b' : 'a').repeat(64),
    epoch: 'epoch-1',
    generation: i === changed ? 2 : 1,
  }));

test('given an agent that applied an output built from 50 clusters, when one endpoint of its 500-endpoint ServiceEntry goes, then the change arrives as a patch with relative provenance in under 2 KB and the agent ends with the whole output', async (t) => {
  const relay = await startRelay(t);
  const received: ReceivedOutput[] = [];
  relay.publish([serviceEntry(), ...services(20)], provenanceOf());
  const harness = await startClient(t, [relay], {
    ...NO_INPUT,
    events: { onOutputReceived: (r) => void received.push(r) },
  });
  await waitFor(
    () => harness.applied.length === 1 && relay.server.connections.applied('east') === harness.applied[0]?.hash,
    { timeoutMs: 10_000 },
  );
  const next = relay.publish([serviceEntry(123), ...services(20)], provenanceOf(7));
  await waitFor(() => relay.server.connections.applied('east') === next.hash, { timeoutMs: 10_000 });
  assert.deepEqual(
    received.map((r) => [r.kind, r.patches]),
    [
      ['full', 0],
      ['delta', 1],
    ],
  );
  assert.ok((received[1]?.wireBytes ?? Infinity) < 2048, `${received[1]?.wireBytes} bytes`);
  assert.equal(snapshotEncoding(harness.applied[1] ?? { resources: [] }), snapshotEncoding(next));
  assert.deepEqual(harness.applied[1]?.provenance, next.provenance);
});

test('given an agent holding another version of a resource under the hash it acked, when a patch of that resource arrives, then it refuses it with MESHRELAY_ERR_DELTA_BASE_MISMATCH, the server resends the output full and the agent ends with it', async (t) => {
  const relay = await startRelay(t);
  const first = relay.publish([serviceEntry(), ...services(20)]);
  let held: AppliedOutput | undefined;
  const harness = await startClient(t, [relay], {
    ...NO_INPUT,
    heldOutput: () => held,
    // After the first apply the local ServiceEntry is not the one the server sent (as if edited under the agent).
    applyOutput: (output) => {
      const resources = output.hash === first.hash ? [serviceEntry(5), ...services(20)] : output.resources;
      held = { cluster: 'east', hash: output.hash, provenance: output.provenance, resources };
      return Promise.resolve();
    },
  });
  await waitFor(() => relay.server.connections.applied('east') === first.hash, { timeoutMs: 10_000 });
  const fullBefore = await snapshotBytes(relay, 'pull', 'full');
  const next = relay.publish([serviceEntry(300), ...services(20)]);
  await waitFor(() => relay.server.connections.applied('east') === next.hash, { timeoutMs: 10_000 });
  assert.ok(logged(harness.lines, /^output refused: MESHRELAY_ERR_DELTA_BASE_MISMATCH/));
  assert.ok((await snapshotBytes(relay, 'pull', 'full')) > fullBefore, 'the output went full after the refusal');
  assert.equal(held?.hash, next.hash);
  assert.equal(snapshotEncoding(held as AppliedOutput), snapshotEncoding(next));
});
