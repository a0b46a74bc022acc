import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  LoopSlicer,
  buildInputSnapshot,
  buildInputSnapshotInSlices,
  buildOutputSnapshot,
  buildOutputSnapshotInSlices,
  canonicalEncodingCount,
  canonicalResource,
  isCanonicalResource,
  jsonArrayInSlices,
  parseWithResourcesLast,
  prettyJsonArrayInSlices,
  sha256Hex,
  sha256InSlices,
  utf8InSlices,
  type Resource,
} from '@meshrelay/api';

/** Resources in no order, with the values canonical encoding must treat exactly as the one-step builders do. */
function mixed(): Resource[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'b', namespace: 'x' },
      spec: { z: 1, a: [3, 2, { y: null, b: 'é\u2028' }], n: -0, big: 1e21 },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'x', labels: { k: 'v' } },
      data: { emoji: '🙂', lone: '\udc00' },
    },
    {
      apiVersion: 'networking.gloo.solo.io/v2',
      kind: 'VirtualDestination',
      metadata: { name: 'vd', namespace: 'x' },
      spec: { hosts: ['h'], skip: undefined },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'a', namespace: 'x' }, spec: {} },
  ] as unknown as Resource[];
}

// A zero budget yields after every step: the sliced paths are exercised at their finest.
const everyStep = () => new LoopSlicer(0);

test('given resources in any order, when an input snapshot is built in slices, then it equals the one-step build', async () => {
  const init = { cluster: 'c', epoch: 'e', generation: 3, resources: mixed() };
  const sliced = await buildInputSnapshotInSlices(init, everyStep());
  assert.deepEqual(sliced, buildInputSnapshot(init));
  assert.ok(Object.isFrozen(sliced.resources) && Object.isFrozen(sliced.resources[0]?.metadata));
});

test('given an output with provenance, when it is built in slices, then it equals the one-step build', async () => {
  const init = {
    cluster: 'c',
    resources: mixed(),
    provenance: [
      { cluster: 'z', inputHash: 'h2' },
      { cluster: 'a', inputHash: 'h1', stale: true },
    ],
  };
  assert.deepEqual(await buildOutputSnapshotInSlices(init, everyStep()), buildOutputSnapshot(init));
});

test('given two resources with one key, when built in slices, then it is refused as MESHRELAY_ERR_INVALID_RESOURCE naming it', async () => {
  const [first] = mixed();
  await assert.rejects(
    buildInputSnapshotInSlices({
      cluster: 'c',
      epoch: 'e',
      generation: 1,
      resources: [first as Resource, { ...(first as Resource) }],
    }),
    {
      code: 'MESHRELAY_ERR_INVALID_RESOURCE',
      message: /duplicate resource .*x\/b/,
    },
  );
});

test('given a buffer larger than a slice step with a character across the step, when hashed and decoded in slices, then both equal the one-step results', async () => {
  const text = `${'a'.repeat(1024 * 1024 - 1)}🙂${'b'.repeat(1000)}`;
  const data = Buffer.from(text, 'utf8');
  assert.equal(await sha256InSlices(data, everyStep()), sha256Hex(data));
  assert.equal(await utf8InSlices(data, everyStep()), text);
});

test('given an array of nested values, when rendered as JSON in slices, then the text equals JSON.stringify', async () => {
  const items = [...mixed(), 'text', 7, [], {}];
  assert.equal(await jsonArrayInSlices(items, everyStep()), JSON.stringify(items));
  const doc = { cluster: 'c', resources: items };
  const rendered = `{\n  "cluster": "c",\n  "resources": ${await prettyJsonArrayInSlices(items, 2, 1, everyStep())}\n}`;
  assert.equal(rendered, JSON.stringify(doc, null, 2));
  assert.equal(await prettyJsonArrayInSlices([], 2, 1), '[]');
});

test('given a build in slices, when other work is queued on the event loop, then that work runs before the build ends', async () => {
  let ran = false;
  setImmediate(() => (ran = true));
  const ranBeforeEnd = await buildInputSnapshotInSlices(
    { cluster: 'c', epoch: 'e', generation: 1, resources: mixed() },
    everyStep(),
  ).then(() => ran);
  assert.equal(ranBeforeEnd, true);
});

test('given documents with their resources last, empty, or laid out otherwise, when parsed in slices, then each equals JSON.parse', async () => {
  const limits = { maxResources: 100, maxDepth: 100 };
  const docs = [
    { cluster: 'c', note: 'a string with ,"resources":[ inside', provenance: [{ cluster: 'x' }], resources: mixed() },
    { cluster: 'c', resources: [] },
    { resources: mixed(), cluster: 'resources first' },
  ];
  for (const doc of docs) {
    const text = JSON.stringify(doc);
    assert.deepEqual(await parseWithResourcesLast(text, limits, everyStep()), JSON.parse(text));
  }
});

test('given a canonical resource, when a snapshot holding it is built in slices, then that resource is kept as it is and not encoded again', async () => {
  const kept = canonicalResource({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'kept', namespace: 'x' },
    spec: { ports: [{ port: 80 }] },
  } as unknown as Resource);
  const before = canonicalEncodingCount();
  const sliced = await buildInputSnapshotInSlices(
    { cluster: 'c', epoch: 'e', generation: 1, resources: [kept] },
    everyStep(),
  );
  assert.equal(sliced.resources[0], kept);
  assert.equal(canonicalEncodingCount(), before);
});

test('given plain resources, when a snapshot is built in slices, then its resources are canonical copies as the one-step build makes them', async () => {
  const sliced = await buildInputSnapshotInSlices(
    { cluster: 'c', epoch: 'e', generation: 1, resources: mixed() },
    everyStep(),
  );
  assert.ok(sliced.resources.every(isCanonicalResource));
});
