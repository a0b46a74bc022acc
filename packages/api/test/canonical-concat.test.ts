import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keptEncoding } from '../src/canonical.ts';
import {
  MeshrelayError,
  canonicalConcat,
  canonicalJson,
  canonicalPart,
  canonicalPieces,
  canonicalResource,
  concatParts,
  isCanonicalPart,
  isCanonicalResource,
  resourceEncoding,
  resourceEncodingPieces,
  unencodedCanonicalResource,
  type Resource,
} from '../src/index.ts';

const group = (prefix: string, n: number): readonly { address: string; labels: Record<string, string> }[] =>
  canonicalPart(
    Array.from({ length: n }, (_, i) => ({
      labels: { zone: `${prefix}-z`, app: 'reviews' },
      address: `${prefix}.${i}`,
    })),
  );

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
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_INVALID_RESOURCE' &&
      /canonical array/.test(err.message),
  );
});

/** Canonical JSON by another route: keys sorted recursively, then JSON.stringify. */
function reference(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sorted(value));
}

test('given values mixing long and short members in every order, when encoded or copied, then the text equals canonical JSON built another way', () => {
  const long = (c: string): string => c.repeat(1500);
  const shapes: unknown[] = [
    [long('a')],
    ['s'],
    [],
    [long('a'), 's', 't', long('b'), 'u'],
    ['s', long('a'), long('b')],
    { z: long('z'), a: 1, m: { deep: [long('d'), 2, 'x'] }, b: 'short' },
    { only: long('o') },
    [{ k: long('k') }, { k: 'v' }, [long('n'), [long('m'), 0]]],
  ];
  for (const value of shapes) {
    assert.equal(canonicalJson(value), reference(value), reference(value).slice(0, 60));
    assert.equal(canonicalJson(canonicalPart(value)), reference(value));
    assert.equal(resourceEncoding(canonicalResource(entry([value]))), reference(entry([value])));
  }
});

test('given an output resource whose encoding links a shared part, when made canonical, then its encoding is joined again on demand instead of kept, so flattening it copies nothing for good', () => {
  const endpoints = canonicalConcat([group('10.3.0', 40), group('10.3.1', 40)]);
  const plain = entry(JSON.parse(JSON.stringify(endpoints)) as unknown[]);
  const resource = canonicalResource(entry(endpoints));
  assert.ok(isCanonicalResource(resource));
  assert.equal(keptEncoding(resource), undefined);
  assert.equal(resourceEncoding(resource), canonicalJson(plain));
  assert.equal(canonicalResource(resource), resource);
  assert.equal(keptEncoding(resource), undefined);
  // The same resource after its intermediate form (unencodedCanonicalResource) is not kept either.
  const intermediate = unencodedCanonicalResource(entry(endpoints));
  assert.equal(intermediate.encoding, canonicalJson(plain));
  assert.equal(canonicalResource(intermediate.resource), intermediate.resource);
  assert.equal(keptEncoding(intermediate.resource), undefined);
});

test('given resources that link no shared part (a small output, an input), when made canonical, then their encoding is kept with them', () => {
  const small = canonicalResource(entry(group('10.4.0', 2)));
  assert.equal(keptEncoding(small), canonicalJson(small));
  const input = canonicalResource(entry(JSON.parse(JSON.stringify(group('10.4.1', 60))) as unknown[]), false);
  assert.ok(canonicalJson(input).length > 4096);
  assert.equal(keptEncoding(input), canonicalJson(input));
  const intermediate = unencodedCanonicalResource(entry(group('10.4.2', 2)));
  assert.equal(keptEncoding(intermediate.resource), undefined);
  assert.equal(canonicalResource(intermediate.resource), intermediate.resource);
  assert.equal(keptEncoding(intermediate.resource), intermediate.encoding);
});

/** The text of pieces (strings, and UTF-8 bytes for shared concatenation parts). */
const joinedPieces = (out: readonly (string | Uint8Array)[]): string =>
  out.map((p) => (typeof p === 'string' ? p : Buffer.from(p).toString('utf8'))).join('');

test('given values with kept parts, concatenations and plain members, when encoded in pieces, then the pieces join to the canonical JSON and hold each shared part once', () => {
  const a = group('10.2.0', 40);
  const b = group('10.2.1', 1);
  const joined = canonicalConcat([a, canonicalPart([]), b]);
  const values: unknown[] = [
    null,
    'x"y',
    -0,
    [],
    {},
    [1, undefined, { b: 2, a: [true, null] }],
    { z: undefined, y: joined, ['__proto__']: { q: 1 }, x: [a, b] },
    { long: canonicalPart({ text: 'ü'.repeat(3000), n: 1 }) },
    entry(joined),
    canonicalResource(entry(joined)),
  ];
  for (const value of values) {
    const out: (string | Uint8Array)[] = [];
    canonicalPieces(value, out);
    assert.equal(joinedPieces(out), canonicalJson(value), JSON.stringify(value)?.slice(0, 60));
  }
  const first: (string | Uint8Array)[] = [];
  resourceEncodingPieces(canonicalResource(entry(joined)), first);
  assert.equal(joinedPieces(first), resourceEncoding(canonicalResource(entry(joined))));
  const bytesOfA = first.find(
    (p) => typeof p !== 'string' && Buffer.from(p).toString('utf8') === keptEncoding(a)?.slice(1, -1),
  );
  assert.ok(bytesOfA, 'a shared group is a piece of its own (its UTF-8 bytes), not copied into a joined string');
  const again: (string | Uint8Array)[] = [];
  canonicalPieces(canonicalConcat([b, a]), again);
  assert.ok(again.includes(bytesOfA), 'the bytes of a group are made once and shared by every list that holds it');
  const kept: (string | Uint8Array)[] = [];
  canonicalPieces(b, kept);
  assert.deepEqual(kept, [keptEncoding(b)], 'a short remembered encoding is one piece');
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  assert.throws(
    () => canonicalPieces(cyclic, []),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_RESOURCE',
  );
});
