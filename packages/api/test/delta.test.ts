import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  computeDelta,
  encodeSnapshotFrames,
  deltaInput,
  encodeSnapshotFor,
  resolveDelta,
  SnapshotAssembler,
  snapshotEncoding,
  type AssembledSnapshot,
  type InputSnapshot,
  type Resource,
} from '../src/index.ts';
import { random } from './support/seeded-random.ts';

const LIMITS = { maxBytes: 8 * 1024 * 1024, maxResources: 10_000 };

function service(name: string, port: number, extra: Record<string, unknown> = {}): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { ports: [{ name: 'http', port }], ...extra },
  };
}

function services(n: number): Resource[] {
  return Array.from({ length: n }, (_, i) => service(`svc-${i}`, 8080, { selector: { app: `svc-${i}` } }));
}

function snap(resources: readonly Resource[], generation = 1): InputSnapshot {
  return buildInputSnapshot({ cluster: 'a', epoch: 'e', generation, resources });
}

/** Frames `next` against `base` as a sender would, and takes it in as a receiver holding `held` would. */
async function transfer(
  base: InputSnapshot | undefined,
  next: InputSnapshot,
  held: InputSnapshot | undefined,
): Promise<{ kind: string; out: AssembledSnapshot }> {
  const frames = await encodeSnapshotFor(base, next, { chunkBytes: 4096 });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  return { kind: frames.kind, out: await resolveDelta(await assembler.finish(), held, LIMITS) };
}

function mutate(resources: Resource[], rnd: (n: number) => number, step: number): Resource[] {
  const out = [...resources];
  const edits = 1 + rnd(4);
  for (let e = 0; e < edits; e++) {
    const op = rnd(3);
    if (op === 0 || out.length === 0) out.push(service(`new-${step}-${e}`, 1000 + rnd(1000)));
    else if (op === 1) out.splice(rnd(out.length), 1);
    else {
      const i = rnd(out.length);
      out[i] = service((out[i] as Resource).metadata.name, 1000 + rnd(1000), { step });
    }
  }
  return out;
}

test('given random sequences of changes, when each is sent as a delta against the previous one, then the receiver ends equal to the full snapshot every time', async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rnd = random(seed);
    let resources = services(30);
    let held = snap(resources);
    for (let step = 0; step < 15; step++) {
      resources = mutate(resources, rnd, step);
      const next = snap(resources, step + 2);
      const { out } = await transfer(held, next, held);
      assert.equal(out.hash, next.hash, `seed ${seed} step ${step}`);
      assert.equal(snapshotEncoding(out), snapshotEncoding(next), `seed ${seed} step ${step}`);
      assert.equal(out.delta, undefined);
      held = snap(out.resources, step + 2);
    }
  }
});

test('given a snapshot of 2000 resources and one changed resource, when framed against the previous one, then it travels as a delta far below the full size', async () => {
  const before = snap(services(2000));
  const changed = services(2000);
  changed[7] = service('svc-7', 9090);
  const after = snap(changed, 2);
  const full = await encodeSnapshotFor(undefined, after);
  const delta = await encodeSnapshotFor(before, after);
  assert.equal(delta.kind, 'delta');
  assert.deepEqual(delta.header.deletedKeys, []);
  assert.ok(delta.wireBytes * 20 < full.wireBytes, `${delta.wireBytes} vs ${full.wireBytes} bytes, both compressed`);
});

test('given an unchanged snapshot, when its delta is computed, then it has no upserts and no deletes', async () => {
  const a = snap(services(50));
  const b = snap(services(50), 2);
  assert.deepEqual(await computeDelta(a.resources, b.resources), { upserts: [], deletedKeys: [] });
});

test('given a delta whose base the receiver does not hold, when resolved, then it is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH', async () => {
  const base = snap(services(40));
  const other = snap(services(41));
  const next = snap([...services(40), service('extra', 1)], 2);
  await assert.rejects(transfer(base, next, other), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
  await assert.rejects(transfer(base, next, undefined), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

test('given a delta whose result does not hash to the announced result, when resolved, then it is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH', async () => {
  const base = snap(services(40));
  const next = snap([...services(40), service('extra', 1)], 2);
  const input = await deltaInput(base, next, Infinity);
  assert.ok(input?.delta);
  const frames = await encodeSnapshotFrames({
    ...input,
    delta: { ...input.delta, deletedKeys: ['Service.v1 default/svc-3'] },
  });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  const assembled = await assembler.finish();
  await assert.rejects(resolveDelta(assembled, base, LIMITS), { code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' });
});

test('given a delta deleting more resources than the limit allows, when its header arrives, then it is refused with MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', async () => {
  const base = snap(services(200));
  const next = snap(services(185), 2);
  const input = await deltaInput(base, next, Infinity);
  assert.ok(input);
  assert.equal(input.delta?.deletedKeys.length, 15);
  const frames = await encodeSnapshotFrames(input);
  assert.throws(() => new SnapshotAssembler(frames.header, { maxBytes: LIMITS.maxBytes, maxResources: 10 }), {
    code: 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
  });
});

test('given a change touching most resources, when framed, then it goes full because a delta would not be smaller', async () => {
  const before = snap(services(20));
  const after = snap(
    services(20).map((r) => ({ ...r, spec: { ports: [{ name: 'http', port: 1 }] } })),
    2,
  );
  assert.equal((await encodeSnapshotFor(before, after)).kind, 'full');
});

test('given a small delta and a large compressible snapshot, when framed, then the choice compares the bytes as they travel (compressed)', async () => {
  // One big changed resource in a snapshot of many similar small ones: the raw delta is smaller, but not once gzip has
  // worked on the full one.
  const big = service('big', 1, {
    annotations: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, `${i * 7919}`])),
  });
  const before = snap([...services(600), big]);
  const after = snap(
    [...services(600), { ...big, spec: { ...(big.spec as object), ports: [{ name: 'http', port: 2 }] } }],
    2,
  );
  const full = await encodeSnapshotFor(undefined, after);
  const chosen = await encodeSnapshotFor(before, after);
  assert.ok(
    chosen.wireBytes <= full.wireBytes,
    `${chosen.kind} of ${chosen.wireBytes} bytes against ${full.wireBytes} full`,
  );
});

test('given a delta, when resolved, then the result carries the size of its canonical encoding, whose hash was checked', async () => {
  const base = snap(services(300));
  const next = snap(
    [
      ...services(300)
        .filter((_, i) => i !== 5)
        .map((r) => (r.metadata.name === 'svc-9' ? service('svc-9', 9999) : r)),
      service('added', 7),
    ],
    2,
  );
  const { out } = await transfer(base, next, base);
  assert.equal(out.hash, next.hash);
  assert.equal(out.canonicalBytes, next.bytes);
});

test('given a held base out of order, when a delta against its sorted form is resolved, then the result is sorted and hashes to the announced result', async () => {
  const sorted = snap(services(50));
  const shuffled = { ...sorted, resources: [...sorted.resources].reverse() };
  const next = snap([...services(50), service('a-new', 1)], 2);
  const { out } = await transfer(sorted, next, shuffled);
  assert.equal(out.hash, next.hash);
  assert.equal(snapshotEncoding(out), snapshotEncoding(next));
});
