import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, buildOutputSnapshot, type Provenance } from '@meshrelay/api';
import { completeProvenance, newerInputsHeld } from '../src/provenance-order.ts';

const inputA = buildInputSnapshot({ cluster: 'cluster-a', epoch: 'ea', generation: 7, resources: [] });
const inputC = buildInputSnapshot({ cluster: 'cluster-c', epoch: 'ec', generation: 2, resources: [] });

test('given an output built with a carried input, when completed, then entries carry epoch and generation and only the carried one is stale', () => {
  const output = buildOutputSnapshot({
    cluster: 'cluster-a',
    resources: [],
    provenance: [
      { cluster: 'cluster-a', inputHash: inputA.hash },
      { cluster: 'cluster-c', inputHash: inputC.hash },
    ],
  });
  const done = completeProvenance(
    output,
    new Map([
      ['cluster-a', inputA],
      ['cluster-c', inputC],
    ]),
    new Set(['cluster-c']),
  );
  assert.equal(done.hash, output.hash);
  assert.deepEqual(done.provenance, [
    { cluster: 'cluster-a', inputHash: inputA.hash, epoch: 'ea', generation: 7 },
    { cluster: 'cluster-c', inputHash: inputC.hash, stale: true, epoch: 'ec', generation: 2 },
  ]);
  assert.ok(Object.isFrozen(done.provenance));
});

const p = (cluster: string, epoch: string | undefined, generation: number): Provenance => ({
  cluster,
  inputHash: `${cluster}-${epoch}-${generation}`,
  ...(epoch ? { epoch, generation } : {}),
});

const cases: { name: string; held: Provenance[]; next: Provenance[]; newer: string[] }[] = [
  {
    name: 'a higher generation of the same epoch is newer',
    held: [p('a', 'e1', 5), p('b', 'e2', 1)],
    next: [p('a', 'e1', 4), p('b', 'e2', 1)],
    newer: ['a'],
  },
  { name: 'the same or a lower generation is not', held: [p('a', 'e1', 4)], next: [p('a', 'e1', 5)], newer: [] },
  { name: 'different epochs are not ordered', held: [p('a', 'e9', 50)], next: [p('a', 'e1', 1)], newer: [] },
  {
    name: 'an entry without an epoch is not ordered',
    held: [p('a', undefined, 9)],
    next: [p('a', 'e1', 1)],
    newer: [],
  },
  {
    name: 'a cluster the next output lacks is not this rule’s business',
    held: [p('c', 'e3', 9)],
    next: [p('a', 'e1', 1)],
    newer: [],
  },
];

for (const c of cases) {
  test(`given held and next provenance, when compared, then ${c.name}`, () => {
    assert.deepEqual(newerInputsHeld(c.held, c.next), c.newer);
  });
}
