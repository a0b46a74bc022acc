// The bounded RFC 6902 applier: the same results as fast-json-patch, the base left as it is, the
// running size exact, and every limit refused before it is passed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import jsonpatch, { type Operation } from 'fast-json-patch';
import { BoundedPatcher } from '../src/bounded-patch.ts';
import {
  LoopSlicer,
  applyResourcePatch,
  canonicalJson,
  deepFreeze,
  DEFAULT_PATCH_LIMITS,
  patchLimits,
  resourceId,
  resourcePatchOps,
  type Resource,
} from '../src/index.ts';
import { PatchBudget } from '../src/patch-budget.ts';
import { random } from './support/seeded-random.ts';

const UNBOUNDED = new PatchBudget(
  patchLimits({ maxOpsPerDelta: 1e9, maxOpsPerResource: 1e9, maxWork: 1e12 }),
  Number.MAX_SAFE_INTEGER,
);
const size = (value: unknown) => Buffer.byteLength(canonicalJson(value));

/** Every JSON pointer into `value` (containers and scalars), the root excluded. */
function pointers(value: unknown, at = ''): string[] {
  if (typeof value !== 'object' || value === null) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const p = `${at}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    out.push(p, ...pointers(v, p));
  }
  return out;
}

function containers(value: unknown): string[] {
  return ['', ...pointers(value)].filter((p) => {
    const v = jsonpatch.getValueByPointer(value, p) as unknown;
    return typeof v === 'object' && v !== null;
  });
}

/** One random operation that applies to `doc` (applied to it, mutating it). */
function randomOp(doc: Record<string, unknown>, rnd: (n: number) => number, step: number): Operation {
  for (;;) {
    const op = candidateOp(doc, rnd, step);
    if (op.op === 'move' && laxMove(doc, op.from, op.path)) continue;
    // A move's target may be gone once its source is removed: such a candidate is drawn again.
    const trial = structuredClone(doc);
    try {
      jsonpatch.applyOperation(trial, structuredClone(op), true, true, true);
    } catch {
      continue;
    }
    for (const k of Object.keys(doc)) delete doc[k];
    Object.assign(doc, trial);
    return op;
  }
}

/**
 * A move to the end of the array it leaves, by the index the array had before: RFC 6902 (remove,
 * then add) refuses it, fast-json-patch takes it; such a move is not drawn.
 */
function laxMove(doc: unknown, from: string, path: string): boolean {
  const parent = (p: string) => p.slice(0, p.lastIndexOf('/'));
  if (parent(from) !== parent(path)) return false;
  const array = jsonpatch.getValueByPointer(doc, parent(path)) as unknown;
  return Array.isArray(array) && path.slice(path.lastIndexOf('/') + 1) === String(array.length);
}

function candidateOp(doc: Record<string, unknown>, rnd: (n: number) => number, step: number): Operation {
  const all = pointers(doc);
  const pick = <T>(xs: readonly T[]) => xs[rnd(xs.length)] as T;
  const target = pick(containers(doc));
  const container = jsonpatch.getValueByPointer(doc, target) as unknown;
  const slot = Array.isArray(container)
    ? rnd(3) === 0
      ? '-'
      : String(rnd(container.length + 1))
    : pick([`k${step}`, 'ab', 'xy', ...Object.keys(container as object)]);
  const place = `${target}/${slot.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  const values = [step, `s${step}`, null, true, { v: step, w: [1, 2] }, [step, { z: 'é' }]];
  let op: Operation;
  const kind = all.length === 0 ? 0 : rnd(6);
  const from = all.length > 0 ? pick(all) : '';
  const existing = all.length > 0 ? pick(all) : '';
  if (kind === 0) op = { op: 'add', path: place, value: structuredClone(pick(values)) };
  else if (kind === 1) op = { op: 'remove', path: existing };
  else if (kind === 2) op = { op: 'replace', path: existing, value: structuredClone(pick(values)) };
  else if (kind === 3 && !place.startsWith(`${from}/`)) op = { op: 'move', from, path: place };
  else if (kind === 4) op = { op: 'copy', from, path: place };
  else op = { op: 'test', path: existing, value: structuredClone(jsonpatch.getValueByPointer(doc, existing)) };
  return op;
}

test("given random operation sequences, when applied by the bounded applier, then the result is fast-json-patch's, the base is unchanged and the running size is the canonical size", async () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rnd = random(seed);
    const base = { a: [1, { b: 'c' }], d: { e: { f: [] } }, g: 'h' };
    const before = canonicalJson(base);
    const reference = structuredClone(base) as Record<string, unknown>;
    const ops = Array.from({ length: 1 + rnd(30) }, (_, step) => randomOp(reference, rnd, step));
    const patcher = new BoundedPatcher('k', deepFreeze(structuredClone(base)), size(base), UNBOUNDED);
    await patcher.apply(JSON.parse(JSON.stringify(ops)) as unknown[], new LoopSlicer());
    assert.equal(canonicalJson(patcher.result), canonicalJson(reference), `seed ${seed}: ${JSON.stringify(ops)}`);
    assert.equal(patcher.bytes, size(reference), `seed ${seed}: the running size`);
    assert.equal(canonicalJson(base), before);
  }
});

test('given a copied value, when the copy is then changed, then the original is not', async () => {
  const patcher = new BoundedPatcher('k', deepFreeze({ a: { x: [1] } }), 0, UNBOUNDED);
  await patcher.apply(
    [
      { op: 'copy', from: '/a', path: '/b' },
      { op: 'add', path: '/b/x/-', value: 2 },
      { op: 'replace', path: '/a/x/0', value: 9 },
    ],
    new LoopSlicer(),
  );
  assert.deepEqual(patcher.result, { a: { x: [9] }, b: { x: [1, 2] } });
});

const resource = (spec: object): Resource =>
  deepFreeze({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'default' }, spec });
const patchOf = (ops: object[]) => ({ key: 'Service.v1 default/s', ops: JSON.stringify(ops) });

/** A value nested `levels` deep. */
function nested(levels: number): object {
  let value: object = {};
  for (let i = 1; i < levels; i++) value = { n: value };
  return value;
}

test('given values placed so that the resource nests exactly 100 and 101 levels deep, when applied, then 100 is taken and 101 refused, as for a full snapshot', async () => {
  const r = resource({});
  const ok = await applyResourcePatch(r, patchOf([{ op: 'add', path: '/spec/deep', value: nested(98) }]));
  assert.equal(resourceId(ok), resourceId(r));
  await assert.rejects(applyResourcePatch(r, patchOf([{ op: 'add', path: '/spec/deep', value: nested(99) }])), {
    code: 'MESHRELAY_ERR_DELTA_LIMIT',
    message: /\/spec\/deep.*deeper than 100 levels/,
  });
  // A move can deepen a value too: the depth is checked where it lands.
  const moved = resource({ deep: nested(98), box: {} });
  await assert.rejects(
    applyResourcePatch(moved, patchOf([{ op: 'move', from: '/spec/deep', path: '/spec/box/deep' }])),
    { code: 'MESHRELAY_ERR_DELTA_LIMIT' },
  );
});

for (const [name, limits, ops, message] of [
  [
    'operations per resource',
    { maxOpsPerResource: 3 },
    4,
    /4 operations; the limit is 3 patch operations per resource/,
  ],
  [
    'operations per delta',
    { maxOpsPerDelta: 2, maxOpsPerResource: 10 },
    3,
    /3 operations; the limit is 2 patch operations per delta/,
  ],
  ['work', { maxWork: 50 }, 30, /patch work limit/],
] as const) {
  test(`given a limit on ${name}, when a patch passes it, then it is refused with MESHRELAY_ERR_DELTA_LIMIT naming it and the resource`, async () => {
    const r = resource({ arr: Array.from({ length: 20 }, (_, i) => i) });
    const budget = new PatchBudget(patchLimits(limits), Number.MAX_SAFE_INTEGER);
    const patch = patchOf(
      Array.from({ length: ops }, () => ({ op: 'move', from: '/spec/arr/0', path: '/spec/arr/19' })),
    );
    await assert.rejects(applyResourcePatch(r, patch, budget), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'MESHRELAY_ERR_DELTA_LIMIT');
      assert.match(err.message, message);
      assert.ok(err.message.includes('Service.v1 default/s'), err.message);
      return true;
    });
  });
}

test('given a byte limit, when copies would pass it, then the patch is refused at the copy that would, not after building them', async () => {
  const r = resource({ blob: 'b'.repeat(1000), arr: [] });
  const budget = new PatchBudget(DEFAULT_PATCH_LIMITS, 10_000);
  const copies = Array.from({ length: 1000 }, () => ({ op: 'copy', from: '/spec/blob', path: '/spec/arr/-' }));
  await assert.rejects(applyResourcePatch(r, patchOf(copies), budget, new LoopSlicer(), size(r)), {
    code: 'MESHRELAY_ERR_DELTA_LIMIT',
    message: /over 10000 bytes, the snapshot byte limit/,
  });
});

test('given a patch limit that is not a positive integer, when the limits are made, then it is refused naming the field', () => {
  assert.throws(() => patchLimits({ maxWork: 0 }), { code: 'MESHRELAY_ERR_INVALID_CONFIG', message: /maxWork/ });
});

test('given a long patch, when it is applied, then the event loop gets turns between its operations', async () => {
  const r = resource({ arr: Array.from({ length: 500 }, (_, i) => i) });
  let turns = 0;
  let running = true;
  const spin = (): void => {
    turns++;
    if (running) setImmediate(spin);
  };
  setImmediate(spin);
  try {
    const ops = Array.from({ length: 200 }, () => ({ op: 'move', from: '/spec/arr/0', path: '/spec/arr/499' }));
    // A slicer with no budget yields after every operation.
    await applyResourcePatch(r, patchOf(ops), undefined, new LoopSlicer(0));
  } finally {
    running = false;
  }
  assert.ok(turns >= 100, `other work ran ${turns} times while the 200 operations were applied`);
});

/** A 500-endpoint ServiceEntry as the translator builds them (the largest resource an honest delta patches). */
function serviceEntry(addresses: readonly string[]): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'vd-svc-000', namespace: 'istio-system' },
    spec: {
      hosts: ['svc-000.global'],
      ports: [{ name: 'http', number: 8080, protocol: 'HTTP' }],
      endpoints: addresses.map((address, i) => ({
        address,
        labels: { app: 'svc-000', cluster: `cluster-${i % 50}` },
        locality: `region-${i % 3}/zone-${i % 5}`,
        ports: { http: 15443 },
      })),
    },
  };
}

test('given honest diffs of a 500-endpoint ServiceEntry (every endpoint readdressed; 60 gone and 60 new in the middle), when applied under the default limits, then each is taken', async () => {
  const addresses = Array.from({ length: 500 }, (_, i) => `10.0.${Math.floor(i / 250)}.${i % 250}`);
  const base = deepFreeze(serviceEntry(addresses));
  for (const next of [
    serviceEntry(addresses.map((a) => a.replace('10.0.', '10.1.'))),
    serviceEntry([
      ...addresses.slice(0, 200),
      ...Array.from({ length: 60 }, (_, i) => `10.9.0.${i}`),
      ...addresses.slice(260),
    ]),
  ]) {
    const patch = { key: resourceId(next), ops: resourcePatchOps(base, next) };
    const ops = (JSON.parse(patch.ops) as unknown[]).length;
    assert.ok(ops >= 60, `${ops} operations`);
    const budget = new PatchBudget(DEFAULT_PATCH_LIMITS, 16 * 1024 * 1024);
    assert.equal(
      canonicalJson(await applyResourcePatch(base, patch, budget, new LoopSlicer(), size(base))),
      canonicalJson(next),
    );
  }
});
