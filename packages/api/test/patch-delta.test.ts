import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildOutputSnapshot,
  canonicalJson,
  canonicalObjectEncodeCount,
  deltaInput,
  encodeSnapshotFor,
  encodeSnapshotFrames,
  rememberReceivedEncodings,
  resolveDelta,
  SnapshotAssembler,
  snapshotEncoding,
  type AssembledSnapshot,
  type HeldResources,
  type OutputSnapshot,
  type Provenance,
  type Resource,
  type SnapshotFrames,
} from '../src/index.ts';

const LIMITS = { maxBytes: 64 * 1024 * 1024, maxResources: 100_000 };
const CLUSTERS = Array.from({ length: 50 }, (_, i) => `cluster-${String(i).padStart(2, '0')}`);

/** The exported service's ServiceEntry: ~500 endpoints, 10 per cluster, as at tier M. */
function serviceEntry(unready = -1): Resource {
  const endpoints = CLUSTERS.flatMap((cluster, c) =>
    Array.from({ length: 10 }, (_, e) => ({
      address: `10.${c}.0.${e + 1}`,
      labels: { app: 'svc-000', cluster },
      locality: `region-${c % 3}`,
      network: cluster,
      ports: { http: 15443 },
    })),
  ).filter((_, i) => i !== unready);
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'vd-svc-000', namespace: 'istio-system' },
    spec: { hosts: ['svc-000.global'], resolution: 'STATIC', endpoints },
  };
}

function others(n: number): Resource[] {
  return Array.from({ length: n }, (_, i) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: { name: `dr-${i}`, namespace: 'istio-system' },
    spec: { host: `svc-${i}.global` },
  }));
}

function provenance(changedGeneration = 1): Provenance[] {
  return CLUSTERS.map((cluster, i) => ({
    cluster,
    inputHash: (i === 0 && changedGeneration > 1 ? 'b' : 'a').repeat(64),
    epoch: 'epoch-0001',
    generation: i === 0 ? changedGeneration : 1,
  }));
}

const before = buildOutputSnapshot({
  cluster: 'cluster-07',
  resources: [serviceEntry(), ...others(30)],
  provenance: provenance(),
});
const after = buildOutputSnapshot({
  cluster: 'cluster-07',
  resources: [serviceEntry(3), ...others(30)],
  provenance: provenance(2),
});

async function receive(frames: SnapshotFrames, held: HeldResources | undefined): Promise<AssembledSnapshot> {
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  return resolveDelta(await assembler.finish(), held, LIMITS);
}

test('given a receiver that takes patches, when one endpoint of a 500-endpoint ServiceEntry and one provenance entry change, then the delta carries one patch and one entry, under 2 KB, and the receiver ends with the next output', async () => {
  const frames = await encodeSnapshotFor(before, after, { patches: true });
  assert.equal(frames.kind, 'delta');
  assert.deepEqual(
    frames.header.patches?.map((p) => p.key),
    ['ServiceEntry.networking.istio.io/v1 istio-system/vd-svc-000'],
  );
  assert.deepEqual(
    [
      frames.header.provenanceRelative,
      frames.header.provenance?.map((p) => p.cluster),
      frames.header.provenanceRemoved,
    ],
    [true, ['cluster-00'], []],
  );
  assert.ok(frames.wireBytes < 2048, `${frames.wireBytes} bytes`);
  const out = await receive(frames, before);
  assert.equal(out.hash, after.hash);
  assert.equal(snapshotEncoding(out), snapshotEncoding(after));
  assert.deepEqual(out.provenance, after.provenance);
});

test("given a receiver that does not say it takes patches, when the same change is framed, then it gets today's whole-resource delta with the whole provenance, and ends with the next output", async () => {
  const frames = await encodeSnapshotFor(before, after);
  assert.equal(frames.kind, 'delta');
  assert.deepEqual(
    [frames.header.patches ?? [], frames.header.provenanceRelative ?? false, frames.header.provenance?.length],
    [[], false, 50],
  );
  const out = await receive(frames, before);
  assert.equal(snapshotEncoding(out), snapshotEncoding(after));
  assert.deepEqual(out.provenance, after.provenance);
});

test('given a receiver holding another provenance under the base hash, when a relative provenance arrives, then it is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH', async () => {
  const frames = await encodeSnapshotFor(before, after, { patches: true });
  const held = { ...before, provenance: before.provenance.slice(0, -1) };
  await assert.rejects(receive(frames, held), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

test('given a receiver holding another version of the patched resource under the base hash, when the patch arrives, then it is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH', async () => {
  const frames = await encodeSnapshotFor(before, after, { patches: true });
  const wrong: OutputSnapshot = { ...before, resources: [serviceEntry(7), ...others(30)] };
  await assert.rejects(receive(frames, wrong), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
  const without: OutputSnapshot = { ...before, resources: others(30) };
  await assert.rejects(receive(frames, without), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

test('given a patch that applies but gives another resource than announced, when resolved, then the result hash check refuses it with MESHRELAY_ERR_DELTA_BASE_MISMATCH', async () => {
  const input = await deltaInput(before, after, after.bytes, undefined, true);
  assert.ok(input?.delta?.patches?.length === 1);
  const patch = input.delta.patches[0] as { key: string; ops: string };
  const tampered = { ...patch, ops: '[{"op":"remove","path":"/spec/endpoints/4"}]' };
  const frames = await encodeSnapshotFrames({ ...input, delta: { ...input.delta, patches: [tampered] } });
  await assert.rejects(receive(frames, before), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

test('given a delta certainly smaller than the snapshot sent full, when framed, then the resources it does not change are not encoded', async () => {
  let reads = 0;
  const counted = (i: number): Resource =>
    Object.freeze({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: Object.freeze({ name: `cm-${i}`, namespace: 'default' }),
      get data() {
        reads++;
        return { value: 'x'.repeat(180) };
      },
    }) as Resource;
  const shared = Array.from({ length: 200 }, (_, i) => counted(i));
  const changed = (v: string): Resource => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'zz', namespace: 'default' },
    data: { value: v },
  });
  const base = { hash: 'a'.repeat(64), resources: [...shared, changed('1')] };
  const resources = [...shared, changed('2')];
  // Under 64 KiB, so the full snapshot would travel uncompressed: the delta is certainly smaller.
  const next = { hash: 'b'.repeat(64), resources, bytes: Buffer.byteLength(snapshotEncoding({ resources })) };
  assert.ok(next.bytes < 64 * 1024);
  reads = 0;
  const frames = await encodeSnapshotFor(base, next);
  assert.equal(frames.kind, 'delta');
  assert.equal(reads, 0, 'no unchanged resource was encoded');
});

test('given a receiver that applied a delta, when the next delta arrives, then the resources it does not change are not encoded again and the result is still checked against its hash', async () => {
  let reads = 0;
  // What the receiver holds: its own objects (a sender holds others), whose encoding is counted.
  const counted = (i: number): Resource =>
    ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${i}`, namespace: 'default' },
      get data() {
        reads++;
        return { value: `v${i}` };
      },
    }) as Resource;
  const plain = (name: string, v: string): Resource => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default' },
    data: { value: v },
  });
  const values = Array.from({ length: 50 }, (_, i) => plain(`cm-${i}`, `v${i}`));
  const output = (v: string) =>
    buildOutputSnapshot({ cluster: 'x', resources: [...values, plain('zz', v)], provenance: [] });
  const [v1, v2, v3] = [output('1'), output('2'), output('3')];
  const held: HeldResources = {
    hash: v1.hash,
    resources: [...Array.from({ length: 50 }, (_, i) => counted(i)), plain('zz', '1')],
  };
  const afterFirst = await receive(await encodeSnapshotFor(v1, v2, { patches: true }), held);
  assert.equal(afterFirst.hash, v2.hash);
  reads = 0;
  const afterSecond = await receive(await encodeSnapshotFor(v2, v3, { patches: true }), afterFirst);
  assert.equal(afterSecond.hash, v3.hash);
  assert.equal(reads, 0, 'no unchanged held resource was encoded again');
  const tampered = await encodeSnapshotFor(v2, v3, { patches: true });
  await assert.rejects(receive({ ...tampered, header: { ...tampered.header, hash: 'c'.repeat(64) } }, afterFirst), {
    code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
  });
});

/** An output with 300 resources besides the ServiceEntry, so encoding what did not change would show. */
const wideBefore = buildOutputSnapshot({
  cluster: 'cluster-07',
  resources: [serviceEntry(), ...others(300)],
  provenance: provenance(),
});
const wideAfter = buildOutputSnapshot({
  cluster: 'cluster-07',
  resources: [serviceEntry(3), ...others(300)],
  provenance: provenance(2),
});

test('given a receiver that took an output full and kept its received texts, when the first delta arrives, then no resource it held is encoded again', async () => {
  const full = await encodeSnapshotFor(undefined, wideBefore);
  assert.equal(full.kind, 'full');
  const held = await receive(full, undefined);
  assert.equal(held.texts?.length, held.resources.length, "a full snapshot comes with each resource's text");
  await rememberReceivedEncodings(held.resources, held.texts ?? []);
  assert.ok(Object.isFrozen(held.resources[0]), 'held resources are frozen once their text is their encoding');

  const delta = await encodeSnapshotFor(wideBefore, wideAfter, { patches: true });
  const encodes = canonicalObjectEncodeCount();
  const out = await receive(delta, held);
  const encodedOnReceive = canonicalObjectEncodeCount() - encodes;

  assert.equal(out.hash, wideAfter.hash);
  assert.equal(snapshotEncoding(out), snapshotEncoding(wideAfter));
  // What is left to encode is the patched ServiceEntry and the rebuilt provenance list (one object per entry, and the
  // list).
  const before2 = canonicalObjectEncodeCount();
  canonicalJson(structuredClone(wideAfter.resources.find((r) => r.kind === 'ServiceEntry')));
  const patchedAlone = canonicalObjectEncodeCount() - before2;
  assert.ok(
    encodedOnReceive <= patchedAlone + CLUSTERS.length + 1,
    `${encodedOnReceive} objects encoded on receipt; the patched resource alone is ${patchedAlone}`,
  );
});

test("given twenty clusters whose inputs changed since the receiver's output, when the delta goes relative, then their hashes travel as 32 bytes each and the receiver rebuilds the same provenance", async () => {
  const moved = (p: Provenance[]) =>
    p.map((e, i) => (i < 20 ? { ...e, inputHash: String.fromCharCode(99 + (i % 3)).repeat(64), generation: 2 } : e));
  const next = buildOutputSnapshot({
    cluster: 'cluster-07',
    resources: [serviceEntry(3), ...others(30)],
    provenance: moved(provenance()),
  });
  const frames = await encodeSnapshotFor(before, next, { patches: true });
  assert.equal(frames.header.provenance?.length, 20);
  assert.ok(
    frames.header.provenance?.every((p) => p.inputHash === '' && p.inputHashBytes?.length === 32),
    'hashes as bytes',
  );
  // 20 entries of a 64-hex hash would be 640 bytes more; the whole delta stays under 2 KB.
  assert.ok(frames.wireBytes < 2048, `${frames.wireBytes} bytes`);
  const out = await receive(frames, before);
  assert.deepEqual(out.provenance, next.provenance);
  assert.equal(out.hash, next.hash);
});

test('given a relative provenance entry whose hash bytes are not a sha256, when it is received, then it is refused as undecodable', async () => {
  const frames = await encodeSnapshotFor(before, after, { patches: true });
  const [entry] = frames.header.provenance ?? [];
  assert.ok(entry);
  const bad = {
    ...frames,
    header: { ...frames.header, provenance: [{ ...entry, inputHashBytes: new Uint8Array(31) }] },
  };
  await assert.rejects(receive(bad, before), { code: 'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE' });
});

/**
 * Twenty clusters with a new input each since `before`, under the same agent epochs (a realistic 36-character epoch).
 */
function twentyMoved(epoch: (i: number) => string): { base: OutputSnapshot; next: OutputSnapshot } {
  const entries = (generation: number): Provenance[] =>
    CLUSTERS.map((cluster, i) => ({
      cluster,
      inputHash: (i < 20 ? String.fromCharCode(97 + generation) : 'a').repeat(64),
      epoch: epoch(i),
      generation: i < 20 ? generation : 1,
    }));
  return {
    base: buildOutputSnapshot({
      cluster: 'cluster-07',
      resources: [serviceEntry(), ...others(30)],
      provenance: entries(1),
    }),
    next: buildOutputSnapshot({
      cluster: 'cluster-07',
      resources: [serviceEntry(3), ...others(30)],
      provenance: entries(2).map((p, i) => (i === 5 ? { ...p, epoch: 'restarted-agent-epoch-0000000000000' } : p)),
    }),
  };
}
const uuidLike = (i: number): string => `6f1c2b9e-0d4a-4c1e-9b7a-${String(i).padStart(12, '0')}`;

test("given twenty changed entries, nineteen under their base entry's epoch, when the delta goes relative, then those travel without their epoch and the receiver rebuilds the same provenance", async () => {
  const { base, next } = twentyMoved(uuidLike);
  const frames = await encodeSnapshotFor(base, next, { patches: true });
  const entries = frames.header.provenance ?? [];
  assert.equal(entries.length, 20);
  assert.deepEqual(
    entries.filter((p) => p.epochOfBase === true).map((p) => p.cluster),
    CLUSTERS.slice(0, 20).filter((_, i) => i !== 5),
  );
  assert.ok(
    entries.every((p) =>
      p.epochOfBase === true
        ? !p.epoch && Number(p.generation) === 2
        : p.epoch === 'restarted-agent-epoch-0000000000000',
    ),
  );
  // Each 36-character epoch left out is 38 bytes less: twenty changed clusters stay under 2,000 bytes.
  assert.ok(frames.wireBytes < 2000, `${frames.wireBytes} bytes`);
  const out = await receive(frames, base);
  assert.deepEqual(out.provenance, next.provenance);
  assert.equal(out.hash, next.hash);
});

test("given a receiver whose held entry has no epoch, when an entry that keeps the base's epoch arrives, then the delta is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH", async () => {
  const { base, next } = twentyMoved(uuidLike);
  const frames = await encodeSnapshotFor(base, next, { patches: true });
  const held: HeldResources = { ...base, provenance: base.provenance.map(({ epoch: _, generation: __, ...p }) => p) };
  await assert.rejects(receive(frames, held), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

for (const [name, edit] of [
  ['that also names an epoch', (p: Record<string, unknown>) => ({ ...p, epoch: 'other' })],
  ['outside a relative provenance', (p: Record<string, unknown>) => p],
] as const) {
  test(`given an entry that keeps the base's epoch ${name}, when it is received, then it is refused as undecodable`, async () => {
    const { base, next } = twentyMoved(uuidLike);
    const frames = await encodeSnapshotFor(base, next, { patches: true });
    const [entry] = (frames.header.provenance ?? []).filter((p) => p.epochOfBase === true);
    assert.ok(entry);
    const relative = name === 'outside a relative provenance' ? { provenanceRelative: false } : {};
    const bad = {
      ...frames,
      header: { ...frames.header, ...relative, provenance: [edit(entry as Record<string, unknown>)] },
    };
    await assert.rejects(receive(bad as SnapshotFrames, base), { code: 'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE' });
  });
}
