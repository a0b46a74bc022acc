import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  adoptCanonicalTexts,
  buildInputSnapshot,
  buildInputSnapshotInSlices,
  canonicalEncodingCount,
  canonicalJson,
  isStringifiable,
  parseResourceArray,
  resourceEncoding,
  type Resource,
} from '@meshrelay/api';
import { random } from './support/seeded-random.ts';

const LIMITS = { maxResources: 10_000, maxDepth: 100 };

/** A resource with the values canonical encoding treats specially: nested keys, escapes, numbers, unicode. */
function resource(i: number, rnd: (n: number) => number): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `p-${String(i).padStart(4, '0')}`,
      namespace: 'ns',
      labels: { app: `a${rnd(5)}`, 'z/key': 'é\u2028"\\' },
    },
    spec: {
      nodeName: `n${rnd(3)}`,
      containers: [{ name: 'c', ports: [{ containerPort: 8000 + rnd(10) }], big: 1e21, small: 0.5 }],
    },
    status: { podIP: `10.0.${rnd(250)}.${rnd(250)}`, conditions: [{ type: 'Ready', status: 'True' }], emoji: '🙂' },
  } as unknown as Resource;
}

/** Parses `text` as the relay does (resources plus each one's received text). */
async function received(text: string): Promise<{ resources: Resource[]; texts: string[] }> {
  const texts: string[] = [];
  return { resources: await parseResourceArray(text, LIMITS, undefined, texts), texts };
}

test('given a full snapshot whose texts are canonical, when its texts are adopted, then the snapshot built from it neither copies nor encodes a resource and hashes as the canonical build does', async () => {
  const rnd = random(7);
  const source = Array.from({ length: 200 }, (_, i) => resource(i, rnd));
  const expected = buildInputSnapshot({ cluster: 'c', epoch: 'e', generation: 1, resources: source });
  const { resources, texts } = await received(`[${expected.resources.map((r) => canonicalJson(r)).join(',')}]`);

  assert.equal(await adoptCanonicalTexts(resources, texts), 200);
  const encodings = canonicalEncodingCount();
  const built = await buildInputSnapshotInSlices({ cluster: 'c', epoch: 'e', generation: 1, resources });
  assert.equal(canonicalEncodingCount() - encodings, 0, 'no resource was copied and encoded again');
  assert.equal(built.hash, expected.hash);
  assert.ok(
    built.resources.every((r, i) => r === resources[i]),
    "the received objects are the snapshot's",
  );
  assert.ok(
    Object.isFrozen(resources[0]) &&
      Object.isFrozen((resources[0] as { spec: { containers: object[] } }).spec.containers[0]),
    'adopted resources are deep-frozen',
  );
  assert.ok(
    resources.every((r, i) => isStringifiable(r) && resourceEncoding(r) === texts[i]),
    'adopted resources keep no text: JSON.stringify writes their encoding again',
  );
});

for (const [name, text] of [
  ['keys out of order', '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}'],
  ['whitespace', '{"apiVersion": "v1","kind":"Pod","metadata":{"name":"a","namespace":"n"}}'],
  [
    'an integer-like key after others',
    '{"apiVersion":"v1","data":{"10":"x","9":"y"},"kind":"Pod","metadata":{"name":"a","namespace":"n"}}',
  ],
  [
    'a number not in its shortest form',
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"},"spec":{"w":1.0}}',
  ],
  ['a needless escape', '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"\\u0061","namespace":"n"}}'],
  ['minus zero', '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"},"spec":{"w":-0}}'],
] as const) {
  test(`given a received text with ${name}, when texts are adopted, then that resource is not, and the snapshot still hashes canonically`, async () => {
    const { resources, texts } = await received(`[${text}]`);
    assert.equal(await adoptCanonicalTexts(resources, texts), 0);
    const built = await buildInputSnapshotInSlices({ cluster: 'c', epoch: 'e', generation: 1, resources });
    assert.equal(
      built.hash,
      buildInputSnapshot({ cluster: 'c', epoch: 'e', generation: 1, resources: JSON.parse(`[${text}]`) as Resource[] })
        .hash,
    );
    assert.notEqual(built.resources[0], resources[0], 'the resource was copied canonically');
  });
}

/** `value` with every object's members in reverse canonical order (same content, another text). */
function reversed(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(reversed);
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .reverse()
      .map((k) => [k, reversed((value as Record<string, unknown>)[k])]),
  );
}

test('given random resources sent with random key orders, when texts are adopted, then every built snapshot hashes as the canonical build', async () => {
  for (let seed = 1; seed <= 50; seed++) {
    const rnd = random(seed);
    const source = Array.from({ length: 20 }, (_, i) => resource(i, rnd));
    const expected = buildInputSnapshot({ cluster: 'c', epoch: 'e', generation: 1, resources: source });
    // Some resources travel canonical, others with their members in the order they were written.
    const text = `[${expected.resources.map((r) => (rnd(2) === 0 ? canonicalJson(r) : JSON.stringify(reversed(r)))).join(',')}]`;
    const { resources, texts } = await received(text);
    await adoptCanonicalTexts(resources, texts);
    const built = await buildInputSnapshotInSlices({ cluster: 'c', epoch: 'e', generation: 1, resources });
    assert.equal(built.hash, expected.hash, `seed ${seed}`);
  }
});
