import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  buildOutputSnapshot,
  canonicalConcat,
  canonicalJson,
  canonicalPart,
  canonicalResource,
  carryCheckpoints,
  compareResources,
  isStringifiable,
  resourceEncoding,
  resourceEncodingPieces,
  type Resource,
} from '../src/index.ts';
import { checkpointCount, digestResourceList, digestResourceListInSlices } from '../src/resumable-digest.ts';

/** A ServiceEntry-like resource of about `size` characters (non-ASCII in it, so bytes and characters differ). */
function entry(name: string, size: number, salt = ''): Resource {
  return canonicalResource({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'zürich' },
    spec: { hosts: [`${name}.global`], note: `${salt}${'é'.repeat(size)}` },
  } as unknown as Resource);
}

/**
 * Endpoint groups shared by the linked entries: canonical parts, some long enough to be hashed as pieces of their own.
 */
const GROUPS = Array.from({ length: 6 }, (_, g) =>
  canonicalPart(
    Array.from({ length: 4 + g * 3 }, (_, i) => ({
      address: `10.${g}.0.${i}`,
      labels: { app: `a${g}`, note: 'ü'.repeat(400 + g * 700) },
      ports: { http: 8080 },
    })),
  ),
);

/**
 * A ServiceEntry whose endpoints concatenate shared groups (as a consumer's ServiceEntry does):
 * its encoding links the groups' text and is not kept, so the digest reads it in pieces.
 */
function linkedEntry(name: string, salt = ''): Resource {
  const picks = [...name].reduce((n, c) => n + c.charCodeAt(0), salt.length);
  const endpoints = canonicalConcat([
    GROUPS[picks % 6] as readonly object[],
    GROUPS[(picks + 2) % 6] as readonly object[],
    canonicalPart([{ address: `${name}.example`, labels: { salt } }]),
  ]);
  return canonicalResource({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'zürich' },
    spec: { hosts: [`${name}.global`], endpoints },
  } as unknown as Resource);
}

/** `entry` for most names, `linkedEntry` for every third. */
function anyEntry(name: string, size: number, salt = ''): Resource {
  return Number(name.slice(-1)) % 3 === 0 ? linkedEntry(name, salt) : entry(name, size, salt);
}

const sorted = (list: Resource[]): readonly Resource[] => Object.freeze([...list].sort(compareResources));
const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `svc-${String(i).padStart(4, '0')}`);

/** The digest the definition gives: sha256 and UTF-8 size of the joined encoding. */
function expected(list: readonly Resource[]): { hash: string; bytes: number } {
  const text = `[${list.map(resourceEncoding).join(',')}]`;
  return { hash: createHash('sha256').update(text).digest('hex'), bytes: Buffer.byteLength(text) };
}

/** A deterministic pseudo-random sequence in [0, 1). */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test('given lists of every size from empty to a few MiB, when digested, then the hash and size are those of the joined encoding', () => {
  for (const n of [0, 1, 2, 50, 700]) {
    const list = sorted(names(n).map((name) => anyEntry(name, 4000)));
    assert.deepEqual(digestResourceList(list, resourceEncodingPieces), expected(list), `${n} resources`);
  }
});

test('given a digested list, when a list that changes, adds or removes resources anywhere is digested after it, then each resumed digest equals the definition', () => {
  const random = seeded(7);
  let previous = sorted(names(600).map((name) => anyEntry(name, 3000)));
  digestResourceList(previous, resourceEncodingPieces);
  for (let step = 0; step < 40; step++) {
    const next = [...previous];
    const at = Math.floor(random() * next.length);
    const what = random();
    if (what < 0.5) next[at] = anyEntry((next[at] as Resource).metadata.name, 3000, `step ${step}`);
    else if (what < 0.75) next.splice(at, 1);
    else next.push(anyEntry(`new-${step}`, 2000 + Math.floor(random() * 5000)));
    const list = sorted(next);
    assert.deepEqual(digestResourceList(list, resourceEncodingPieces, previous), expected(list), `step ${step}`);
    previous = list;
  }
});

test('given a digested list, when the same list or a list it does not start like is digested against it, then the digest equals the definition', () => {
  const list = sorted(names(300).map((name) => entry(name, 5000)));
  digestResourceList(list, resourceEncodingPieces);
  assert.deepEqual(digestResourceList(list, resourceEncodingPieces, list), expected(list));
  const other = sorted(names(10).map((name) => entry(name, 10)));
  assert.deepEqual(digestResourceList(other, resourceEncodingPieces, list), expected(other));
  const shorter = Object.freeze(list.slice(0, 120));
  assert.deepEqual(digestResourceList(shorter, resourceEncodingPieces, list), expected(shorter));
});

test('given an output built after an earlier one, when it is built with the earlier one to resume from, then it is the output built without it', () => {
  const first = buildOutputSnapshot({
    cluster: 'c1',
    resources: names(400).map((name) => entry(name, 2000)),
    provenance: [],
  });
  const changed = first.resources.map((r, i) => (i === 250 ? entry(r.metadata.name, 2000, 'changed') : r));
  const resumed = buildOutputSnapshot({ cluster: 'c1', resources: changed, provenance: [] }, first);
  const fresh = buildOutputSnapshot({ cluster: 'c1', resources: changed, provenance: [] });
  assert.equal(resumed.hash, fresh.hash);
  assert.equal(resumed.bytes, fresh.bytes);
  assert.notEqual(resumed.hash, first.hash);
});

test('given lists of linked and plain entries, when digested, then a checkpoint is kept about every 256 KiB, so a later list resumes near its first difference', () => {
  for (const make of [linkedEntry, (name: string) => entry(name, 3000)]) {
    const list = sorted(names(400).map((name) => make(name)));
    const { bytes } = digestResourceList(list, resourceEncodingPieces);
    // Checkpoints fall between resources: at least one per 256 KiB plus the largest resource.
    const largest = Math.max(...list.map((r) => Buffer.byteLength(resourceEncoding(r))));
    const atLeast = Math.floor(bytes / (256 * 1024 + largest));
    assert.ok(
      atLeast > 5 && checkpointCount(list) >= atLeast && checkpointCount(list) <= bytes / (256 * 1024),
      `${checkpointCount(list)} checkpoints for ${bytes} bytes (at least ${atLeast})`,
    );
  }
});

/**
 * An input resource as the intake copies it (no parts kept); every fifth has integer-like label keys, which V8
 * enumerates in numeric order ("9" before "10"), not canonical.
 */
function inputResource(name: string, salt = ''): Resource {
  const labels: Record<string, string> = { app: 'a', zone: 'z' };
  if (Number(name.slice(-1)) % 5 === 0) Object.assign(labels, { '10': 'ten', '9': 'nine' });
  return canonicalResource(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'zürich', labels },
      spec: { note: `${salt}${'é'.repeat(2000)}` },
    } as unknown as Resource,
    false,
  );
}

/** The definition, from plain copies encoded canonically from scratch (no kept or stringified encoding). */
function independent(list: readonly Resource[]): { hash: string; bytes: number } {
  const text = `[${list.map((r) => canonicalJson(structuredClone(r))).join(',')}]`;
  return { hash: createHash('sha256').update(text).digest('hex'), bytes: Buffer.byteLength(text) };
}

test('given input resources kept without their text, when lists of them are digested in slices after earlier ones, then every digest equals the definition and resumes from carried checkpoints', async () => {
  const first = sorted(names(400).map((name) => inputResource(name)));
  assert.ok(
    first.every((r) => isStringifiable(r) === (Number(r.metadata.name.slice(-1)) % 5 !== 0)),
    'the copies with an integer-like key keep their text',
  );
  assert.equal(
    first.filter((r) => isStringifiable(r)).length,
    320,
    'resources whose keys V8 keeps in canonical order keep no text',
  );
  assert.deepEqual(await digestResourceListInSlices(first, resourceEncodingPieces), independent(first));
  const count = checkpointCount(first);
  assert.ok(count > 4, `${count} checkpoints`);

  const copy = Object.freeze([...first]);
  carryCheckpoints(first, copy);
  assert.equal(checkpointCount(copy), count, 'a list of the same resources takes every checkpoint');
  const changed = Object.freeze(first.map((r, i) => (i === 200 ? inputResource(r.metadata.name, 'changed') : r)));
  carryCheckpoints(first, changed);
  assert.ok(
    checkpointCount(changed) > 0 && checkpointCount(changed) < count,
    'a changed list takes the checkpoints before its change only',
  );

  const random = seeded(11);
  let previous: readonly Resource[] = copy;
  for (let step = 0; step < 30; step++) {
    const at = Math.floor(random() * previous.length);
    const next = Object.freeze(previous.map((r, i) => (i === at ? inputResource(r.metadata.name, `step ${step}`) : r)));
    assert.deepEqual(
      await digestResourceListInSlices(next, resourceEncodingPieces, previous),
      independent(next),
      `step ${step}`,
    );
    assert.deepEqual(digestResourceList(next, resourceEncodingPieces), independent(next), `step ${step}, not resumed`);
    previous = next;
  }
});
