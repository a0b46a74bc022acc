// Deltas between sorted snapshots are found by walking both lists side by side, and a delta is
// applied to a sorted base by binary search; lists that are not sorted take the map of ids.
// Every path must give what a plain comparison by id and canonical encoding gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyDelta,
  canonicalJson,
  compareResources,
  computeDelta,
  deepFreeze,
  resourceId,
  resourcePatchOps,
  type Resource,
  type ResourceDelta,
  type ResourcePatch,
} from '../src/index.ts';
import { random } from './support/seeded-random.ts';

const KINDS = [
  { apiVersion: 'v1', kind: 'Service', namespaced: true },
  { apiVersion: 'v1', kind: 'Node', namespaced: false },
  { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespaced: true },
  { apiVersion: 'networking.gloo.solo.io/v2', kind: 'VirtualDestination', namespaced: true },
] as const;

function resource(rnd: (n: number) => number, version: number): Resource {
  const k = KINDS[rnd(KINDS.length)] as (typeof KINDS)[number];
  // A few cluster-scoped names carry a slash, which the key of a removed resource cannot be split back into.
  const name = k.namespaced || rnd(4) > 0 ? `r-${rnd(40)}` : `odd/${rnd(5)}`;
  const metadata = k.namespaced ? { name, namespace: `ns-${rnd(3)}` } : { name };
  return { apiVersion: k.apiVersion, kind: k.kind, metadata, spec: { version } };
}

/** Resources with distinct keys, sorted; frozen when `frozen`. */
function list(resources: readonly Resource[], frozen: boolean): Resource[] {
  const byId = new Map(resources.map((r) => [resourceId(r), r] as const));
  const out = [...byId.values()].sort(compareResources);
  return frozen ? out.map((r) => deepFreeze(r)) : out;
}

/** What a delta from `base` to `next` must hold, by id and canonical encoding. */
function expectedDelta(
  base: readonly Resource[],
  next: readonly Resource[],
): { upserts: string[]; deletedKeys: string[] } {
  const old = new Map(base.map((r) => [resourceId(r), canonicalJson(r)] as const));
  const ids = new Set(next.map(resourceId));
  return {
    upserts: next.filter((r) => old.get(resourceId(r)) !== canonicalJson(r)).map(canonicalJson),
    deletedKeys: base
      .map(resourceId)
      .filter((id) => !ids.has(id))
      .sort(),
  };
}

/**
 * A next list from `base`: most resources the same objects, some edited (as equal or new copies), some removed, some
 * added.
 */
function change(base: readonly Resource[], rnd: (n: number) => number, step: number, frozen: boolean): Resource[] {
  const out: Resource[] = [];
  for (const r of base) {
    const op = rnd(10);
    if (op === 0) continue;
    if (op === 1) out.push({ ...r, spec: { version: step } });
    else if (op === 2) out.push(JSON.parse(JSON.stringify(r)) as Resource);
    else out.push(r);
  }
  for (let i = rnd(4); i > 0; i--) out.push(resource(rnd, step));
  return list(out, frozen);
}

test('given random sorted and unsorted snapshots, when deltas are computed and applied, then they equal a comparison by id and encoding and the result is the next snapshot', async () => {
  for (let seed = 1; seed <= 60; seed++) {
    const rnd = random(seed);
    const frozen = seed % 3 !== 0;
    let base = list(
      Array.from({ length: 30 }, () => resource(rnd, 0)),
      frozen,
    );
    if (frozen) Object.freeze(base);
    for (let step = 1; step <= 8; step++) {
      const next = change(base, rnd, step, frozen);
      // Every fourth step sees the next list in another order (the map of ids is used then).
      const given = step % 4 === 0 ? [...next].reverse() : next;
      if (frozen) Object.freeze(given);
      const delta = await computeDelta(base, given);
      const expected = expectedDelta(base, given);
      assert.deepEqual(delta.upserts.map(canonicalJson), expected.upserts, `seed ${seed} step ${step}: upserts`);
      assert.deepEqual(delta.deletedKeys, expected.deletedKeys, `seed ${seed} step ${step}: deleted keys`);
      const applied = await applyDelta(base, delta);
      assert.equal(canonicalJson(applied.resources), canonicalJson(next), `seed ${seed} step ${step}: applied`);
      assert.equal(applied.sorted, true);
      base = next;
    }
  }
});

test('given a sorted base, when a delta patches, deletes and upserts keys (also ones the base lacks or a parse cannot find), then each lands on its resource or is refused as before', async () => {
  const base = deepFreeze(
    list(
      [
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'a/b' }, spec: { v: 1 } },
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { v: 1 } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 's1', namespace: 'x' }, spec: { v: 1 } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 's2', namespace: 'x' }, spec: { v: 1 } },
      ],
      true,
    ),
  );
  const [slashed, n1, s1, s2] = base as [Resource, Resource, Resource, Resource];
  const edited = (r: Resource): Resource => ({ ...r, spec: { v: 2 } });
  const patch = (r: Resource): ResourcePatch => ({ key: resourceId(r), ops: resourcePatchOps(r, edited(r)) });
  const cases: { delta: ResourceDelta; expected: Resource[] }[] = [
    { delta: { upserts: [], deletedKeys: [], patches: [patch(s2)] }, expected: [slashed, n1, s1, edited(s2)] },
    {
      delta: { upserts: [], deletedKeys: [resourceId(slashed)], patches: [patch(n1)] },
      expected: [edited(n1), s1, s2],
    },
    {
      delta: { upserts: [], deletedKeys: [resourceId(s1), 'Service.v1 x/absent'], patches: [patch(slashed)] },
      expected: [edited(slashed), n1, s2],
    },
    {
      delta: {
        upserts: [edited(s1), { apiVersion: 'v1', kind: 'Service', metadata: { name: 's0', namespace: 'x' } }],
        deletedKeys: ['not a key'],
      },
      expected: [
        slashed,
        n1,
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 's0', namespace: 'x' } },
        edited(s1),
        s2,
      ],
    },
  ];
  for (const [i, { delta, expected }] of cases.entries()) {
    const applied = await applyDelta(base, delta);
    assert.equal(canonicalJson(applied.resources), canonicalJson(expected), `case ${i}`);
  }
  const missing = { key: 'Service.v1 x/gone', ops: resourcePatchOps(s1, edited(s1)) };
  await assert.rejects(applyDelta(base, { upserts: [], deletedKeys: [], patches: [missing] }), {
    code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
  });
});
