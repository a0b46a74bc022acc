import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  buildOutputSnapshot,
  deltaInput,
  encodeSnapshotFramesSync,
  snapshotEncoding,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { mtlsClient, next, openPull, openPush, registerCluster, service, startTestServer } from './harness.ts';

const snap = (generation: number, resources: Resource[]) =>
  buildInputSnapshot({ cluster: 'a', epoch: 'epoch-1', generation, resources });
const services = (n: number, extra: string[] = []) => [
  ...Array.from({ length: n }, (_, i) => service(`s${i}`)),
  ...extra.map((x) => service(x)),
];

/** Sends `next` framed against `base` (a delta when one is smaller), as the agent would. */
async function push(
  stream: ReturnType<typeof openPush>,
  base: InputSnapshot | undefined,
  nextSnap: InputSnapshot,
  tamper: { baseHash?: string } = {},
  patches = false,
): Promise<'full' | 'delta'> {
  const input = (await deltaInput(base, nextSnap, nextSnap.bytes, undefined, patches)) ?? {
    ...nextSnap,
    encoding: snapshotEncoding(nextSnap),
  };
  const delta = input.delta && tamper.baseHash ? { ...input.delta, baseHash: tamper.baseHash } : input.delta;
  const frames = encodeSnapshotFramesSync({
    epoch: nextSnap.epoch,
    generation: nextSnap.generation,
    hash: input.hash,
    encoding: input.encoding,
    ...(delta ? { delta } : {}),
  });
  stream.write({ header: frames.header });
  for (const chunk of frames.chunks) stream.write({ chunk });
  return delta ? 'delta' : 'full';
}

async function pushing(t: TestContext) {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const stream = openPush(mtlsClient(t, server, a));
  t.after(() => stream.cancel());
  const first = snap(1, services(50));
  await push(stream, undefined, first);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.acceptsDeltas, true, 'the server says it takes deltas');
  assert.equal(ack.acceptsPatches, true, 'the server says it takes patches');
  return { server, stream, first };
}

test('given an accepted input snapshot, when a delta patching one resource of it arrives, then the server stores the full result', async (t) => {
  const { server, stream } = await pushing(t);
  const changed = services(50).map((r) =>
    r.metadata.name === 's9' ? { ...r, spec: { ...(r.spec as object), ports: [{ name: 'http', port: 9999 }] } } : r,
  );
  const second = snap(2, changed);
  const first = await server.store.getInput('a');
  assert.ok(first);
  const input = await deltaInput(first, second, second.bytes, undefined, true);
  assert.equal(input?.delta?.patches?.length, 1, 'the change goes as a patch');
  await push(stream, first, second, {}, true);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.deepEqual([ack.accepted, ack.hash], [true, second.hash]);
  assert.equal(snapshotEncoding((await server.store.getInput('a')) as InputSnapshot), snapshotEncoding(second));
});

test('given an accepted input snapshot, when a delta against it arrives, then the server stores the full result', async (t) => {
  const { server, stream, first } = await pushing(t);
  const second = snap(2, services(50, ['new']));
  assert.equal(await push(stream, first, second), 'delta');
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.deepEqual([ack.accepted, ack.hash], [true, second.hash]);
  const stored = await server.store.getInput('a');
  assert.equal(stored?.hash, second.hash);
  assert.equal(snapshotEncoding(stored as InputSnapshot), snapshotEncoding(second));
});

test('given a delta against a snapshot the server does not hold, when it arrives, then it is NACKed with MESHRELAY_ERR_DELTA_BASE_MISMATCH, the previous input stays, and the full snapshot after it is accepted', async (t) => {
  const { server, stream, first } = await pushing(t);
  const second = snap(2, services(50, ['new']));
  assert.equal(await push(stream, first, second, { baseHash: 'f'.repeat(64) }), 'delta');
  const nack = await next(stream, (m) => m.ack ?? undefined);
  assert.deepEqual(
    [nack.accepted, nack.errorCode, nack.hash],
    [false, 'MESHRELAY_ERR_DELTA_BASE_MISMATCH', second.hash],
  );
  assert.equal((await server.store.getInput('a'))?.hash, first.hash);
  await push(stream, undefined, second);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.deepEqual([ack.accepted, ack.hash], [true, second.hash]);
});

function output(resources: Resource[]) {
  return buildOutputSnapshot({ cluster: 'a', resources, provenance: [] });
}

for (const acceptsDeltas of [true, false]) {
  test(`given an agent that ${acceptsDeltas ? 'takes' : 'does not say it takes'} deltas and applied an output, when one resource changes, then the next output goes ${acceptsDeltas ? 'as a delta' : 'full'}`, async (t) => {
    const server = await startTestServer(t);
    const a = await registerCluster(server, 'a');
    const pull = openPull(mtlsClient(t, server, a));
    t.after(() => pull.cancel());
    pull.write({ hello: { heldHash: '', heldKeys: [], heldProvenance: [], acceptsDeltas } });
    await waitFor(() => server.connections.streams('a').some((s) => s.kind === 'pull'));
    const first = output(services(50));
    server.outputs.publish(first);
    const h1 = await next(pull, (m) => m.header ?? undefined);
    assert.deepEqual([h1.hash, h1.baseHash], [first.hash, '']);
    pull.write({ ack: { hash: first.hash, accepted: true } });
    const second = output(services(50, ['new']));
    server.outputs.publish(second);
    const h2 = await next(pull, (m) => m.header ?? undefined);
    assert.equal(h2.hash, second.hash);
    assert.equal(h2.baseHash, acceptsDeltas ? first.hash : '');
  });
}

/** Fifty clusters' provenance; `changed` has a newer input. */
const provenanceOf = (changed = -1) =>
  Array.from({ length: 50 }, (_, i) => ({
    cluster: `c-${String(i).padStart(2, '0')}`,
    inputHash: (i === changed ? 'b' : 'a').repeat(64),
    epoch: 'e',
    generation: i === changed ? 2 : 1,
  }));

for (const acceptsPatches of [true, false]) {
  test(`given an agent that takes deltas and ${acceptsPatches ? 'says it takes patches' : 'does not say it takes patches (an older one)'}, when one resource and one provenance entry change, then the delta carries ${acceptsPatches ? 'a patch and the changed entry only' : 'the resource whole and the whole provenance'}`, async (t) => {
    const server = await startTestServer(t);
    const a = await registerCluster(server, 'a');
    const pull = openPull(mtlsClient(t, server, a));
    t.after(() => pull.cancel());
    pull.write({ hello: { heldHash: '', heldKeys: [], heldProvenance: [], acceptsDeltas: true, acceptsPatches } });
    await waitFor(() => server.connections.streams('a').some((s) => s.kind === 'pull'));
    const first = buildOutputSnapshot({ cluster: 'a', resources: services(50), provenance: provenanceOf() });
    server.outputs.publish(first);
    await next(pull, (m) => m.header ?? undefined);
    pull.write({ ack: { hash: first.hash, accepted: true } });
    const changed = services(50).map((r) =>
      r.metadata.name === 's7' ? { ...r, spec: { ...(r.spec as object), ports: [{ name: 'http', port: 9999 }] } } : r,
    );
    server.outputs.publish(buildOutputSnapshot({ cluster: 'a', resources: changed, provenance: provenanceOf(3) }));
    const h2 = await next(pull, (m) => m.header ?? undefined);
    assert.equal(h2.baseHash, first.hash);
    assert.equal(h2.patches?.length ?? 0, acceptsPatches ? 1 : 0);
    assert.equal(h2.provenanceRelative ?? false, acceptsPatches);
    assert.deepEqual(
      h2.provenance?.map((p: { cluster?: string | null }) => p.cluster),
      acceptsPatches ? ['c-03'] : provenanceOf().map((p) => p.cluster),
    );
  });
}
