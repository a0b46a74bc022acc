import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { adoptCanonicalTexts, canonicalJson, type Resource } from '@meshrelay/api';
import { deepFreezeSharingStrings, StringPool } from '../src/string-pool.ts';

function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** A pod and its EndpointSlice entry name the same IP and node, as a cluster's discovery does. */
function podText(i: number): string {
  const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const node = `node-c${i % 3}-long-enough-not-to-be-a-one-byte-cache-hit-${i % 7}`;
  return canonicalJson({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `pod-${i}`, namespace: 'shop' },
    spec: { nodeName: node },
    status: { podIP: ip, podIPs: [{ ip }], hostIP: node },
  });
}

test('given a parsed value, when it is frozen sharing strings, then it is deep-frozen and encodes exactly as before', () => {
  const long = 'x'.repeat(200);
  const shared = Object.freeze({ kept: 'as it is' });
  const value = JSON.parse(
    '{"b":[{"s":"one"},["two","two"],3,null,true],"a":{"long":"' + long + '","n":1.5},"9":"nine","10":"ten"}',
  ) as Record<string, unknown>;
  value['shared'] = shared;
  const before = JSON.stringify(value);
  const frozen = deepFreezeSharingStrings(value, new StringPool());
  assert.equal(frozen, value, 'the same object, not a copy');
  assert.equal(JSON.stringify(frozen), before, 'members and key order are unchanged');
  assert.ok(
    Object.isFrozen(frozen) &&
      Object.isFrozen(frozen['b']) &&
      Object.isFrozen((frozen['b'] as unknown[])[0]) &&
      Object.isFrozen((frozen['b'] as unknown[])[1]) &&
      Object.isFrozen(frozen['a']),
  );
  assert.equal(frozen['shared'], shared, 'an already frozen member is left alone');
});

test('given a pool, when the same short string is offered again, then the first instance is given back; long strings pass through', () => {
  const pool = new StringPool();
  const first = ['shop', '10.0.0.1'].join('/');
  assert.equal(pool.share(first), first);
  assert.equal(pool.share(['shop', '10.0.0.1'].join('/')), first);
  const long = 'y'.repeat(65);
  assert.equal(pool.share(long), long);
});

test('given pods whose IP and node repeat across resources, when an agent snapshot is adopted, then the repeats take no heap of their own', async () => {
  const count = 20_000;
  const texts = Array.from({ length: count }, (_, i) => podText(i));
  const heapOf = async (share: boolean): Promise<{ bytes: number; kept: Resource[] }> => {
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const kept = texts.map((t) => JSON.parse(t) as Resource);
    if (share) assert.equal(await adoptCanonicalTexts(kept, texts), count);
    collectGarbage();
    return { bytes: process.memoryUsage().heapUsed - before, kept };
  };
  const parsed = await heapOf(false);
  const adopted = await heapOf(true);
  // Per pod, parsing holds the IP three times and the node name twice: four strings of 24-80 bytes
  // that adoption lets go. Half of that is asserted, so V8's layout details do not decide the test.
  const saved = parsed.bytes - adopted.bytes;
  assert.ok(
    saved > count * 2 * 24,
    `adoption kept ${adopted.bytes} bytes against ${parsed.bytes} parsed: ${saved} saved`,
  );
  assert.deepEqual(
    adopted.kept.map((r) => canonicalJson(r)),
    texts,
    'every adopted pod encodes as received',
  );
  // The parsed pods stay referenced until here, so the second reading's baseline includes them.
  assert.ok(parsed.kept.length === count);
});
