import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError, canonicalConcat, canonicalJson, canonicalPart, canonicalResource, concatParts, isCanonicalPart, resourceEncoding, type Resource } from '../src/index.ts';

const group = (prefix: string, n: number): readonly { address: string; labels: Record<string, string> }[] =>
  canonicalPart(Array.from({ length: n }, (_, i) => ({ labels: { zone: `${prefix}-z`, app: 'reviews' }, address: `${prefix}.${i}` })));

const entry = (endpoints: readonly unknown[]): Resource => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'reviews', namespace: 'shop' },
  spec: { hosts: ['reviews.mesh'], endpoints },
});

test('given canonical groups, some empty, when concatenated, then the list and a resource holding it encode exactly like plain copies', () => {
  const a = group('10.0.0', 3);
  const b = group('10.0.1', 2);
  const joined = canonicalConcat([canonicalPart([]), a, canonicalPart([]), b]);
  const plain = JSON.parse(JSON.stringify([...a, ...b])) as unknown[];
  assert.equal(canonicalJson(joined), canonicalJson(plain));
  assert.equal(canonicalJson(canonicalConcat([canonicalPart([])])), '[]');
  const resource = canonicalResource(entry(joined));
  assert.equal(resourceEncoding(resource), canonicalJson(entry(plain)));
  assert.deepEqual(resource, JSON.parse(canonicalJson(entry(plain))));
});

test('given canonical groups, when concatenated, then the list is frozen, holds the groups items by identity and names its groups', () => {
  const a = group('10.1.0', 2);
  const b = group('10.1.1', 1);
  const joined = canonicalConcat([a, b]);
  assert.ok(Object.isFrozen(joined) && isCanonicalPart(joined));
  assert.deepEqual(joined, [...a, ...b]);
  assert.equal(joined[0], a[0]);
  assert.equal(joined[2], b[0]);
  assert.deepEqual(concatParts(joined), [a, b]);
  assert.equal(concatParts([...a]), undefined);
});

test('given a group that is not a canonical array, when concatenated, then it is refused as an invalid resource', () => {
  const plain = [{ address: '10.2.0.1' }];
  assert.throws(
    () => canonicalConcat([group('10.2.1', 1), plain]),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_RESOURCE' && /canonical array/.test(err.message),
  );
});
