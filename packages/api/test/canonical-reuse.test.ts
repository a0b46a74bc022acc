import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildOutputSnapshot,
  canonicalEncodingCount,
  canonicalJson,
  canonicalResource,
  encodeResources,
  sha256Hex,
  snapshotEncoding,
  type Resource,
} from '../src/index.ts';

const LONG = 'x'.repeat(300);

/** A resource with a large spec (its encoding is long enough to be remembered) and awkward members. */
const entry = (name: string): Resource => ({
  kind: 'ServiceEntry',
  apiVersion: 'networking.istio.io/v1',
  metadata: { namespace: 'shop', name, annotations: undefined },
  spec: {
    hosts: [`${name}.mesh`],
    endpoints: [
      { address: '10.0.0.1', weight: -0, note: LONG },
      { address: '10.0.0.2', labels: JSON.parse('{"__proto__":"p","b":"1"}') as object },
    ],
    skip: undefined,
  },
});

test('given any resource, when made canonical, then the copy equals JSON.parse of its canonical encoding and is deep-frozen', () => {
  const original = entry('a');
  const copy = canonicalResource(original);
  const expected = JSON.parse(canonicalJson(original)) as Resource;
  assert.deepStrictEqual(copy, expected);
  assert.deepEqual(Object.keys(copy.spec as object), Object.keys(expected.spec as object));
  assert.ok(
    Object.isFrozen(copy) &&
      Object.isFrozen(copy.spec) &&
      Object.isFrozen((copy.spec as { endpoints: object[] }).endpoints[1]),
  );
  assert.notEqual(copy, original);
});

test('given a canonical resource, when a resource is built around its spec with other metadata, then the spec is shared and the bytes equal a fresh encoding', () => {
  const base = canonicalResource(entry('b'));
  const annotated = canonicalResource({
    ...base,
    metadata: { ...base.metadata, annotations: { 'meshrelay.io/sources': 'x' } },
  });
  assert.equal(annotated.spec, base.spec);
  const fresh = JSON.parse(
    JSON.stringify({ ...base, metadata: { ...base.metadata, annotations: { 'meshrelay.io/sources': 'x' } } }),
  ) as Resource;
  assert.equal(canonicalJson(annotated), canonicalJson(fresh));
  const snapshot = buildOutputSnapshot({ cluster: 'c', resources: [annotated], provenance: [] });
  assert.equal(snapshotEncoding(snapshot), canonicalJson([fresh]));
  assert.equal(snapshot.hash, sha256Hex(canonicalJson([fresh])));
});

test('given canonical resources, when encoded again, then nothing is re-encoded and the list encoding is their encodings joined', () => {
  const resources = [canonicalResource(entry('d')), canonicalResource(entry('c'))];
  const before = canonicalEncodingCount();
  const encoded = encodeResources(resources);
  assert.equal(canonicalEncodingCount() - before, 0);
  assert.deepEqual(
    encoded.resources.map((r) => r.metadata.name),
    ['c', 'd'],
  );
  assert.equal(encoded.encoding, canonicalJson([...resources].reverse()));
});
