import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { bundlePem, isExactBundleStep, targetFor, type RotationPhase } from '../src/index.ts';

const TIMEOUT = { timeout: 10_000 };
const PHASES: readonly RotationPhase[] = [0, 1, 2, 3];

test('targetFor gives the contract table', TIMEOUT, () => {
  assert.deepEqual(targetFor(0, 'old'), { bundleRootIds: ['old'], signingRootId: 'old' });
  assert.deepEqual(targetFor(1, 'old', 'new'), { bundleRootIds: ['old', 'new'], signingRootId: 'old' });
  assert.deepEqual(targetFor(2, 'old', 'new'), { bundleRootIds: ['old', 'new'], signingRootId: 'new' });
  assert.deepEqual(targetFor(3, 'old', 'new'), { bundleRootIds: ['new'], signingRootId: 'new' });
});

test('targetFor refuses a rotating phase without a distinct new root', TIMEOUT, () => {
  const invalid = (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_ARGUMENT';
  assert.throws(() => targetFor(1, 'old'), invalid);
  assert.throws(() => targetFor(2, 'old', 'old'), invalid);
  assert.throws(() => targetFor(4 as RotationPhase, 'old', 'new'), invalid);
});

test('every adjacent phase pair is an exact bundle step, both ways, and signs under a trusted root', TIMEOUT, () => {
  for (const p of PHASES.slice(0, 3)) {
    const a = targetFor(p, 'old', p === 0 ? undefined : 'new');
    const b = targetFor((p + 1) as RotationPhase, 'old', 'new');
    assert.ok(isExactBundleStep(a.bundleRootIds, b.bundleRootIds), `${p} -> ${p + 1}`);
    assert.ok(isExactBundleStep(b.bundleRootIds, a.bundleRootIds), `${p + 1} -> ${p}`);
    // A cluster one phase behind or ahead still trusts the other's signer.
    assert.ok(a.bundleRootIds.includes(b.signingRootId), `phase ${p} trusts phase ${p + 1}'s signer`);
    assert.ok(b.bundleRootIds.includes(a.signingRootId), `phase ${p + 1} trusts phase ${p}'s signer`);
  }
  // Two apart, the ends do not trust each other: the rotation must never allow that gap.
  assert.ok(!targetFor(3, 'old', 'new').bundleRootIds.includes(targetFor(0, 'old').signingRootId));
  assert.ok(!isExactBundleStep(['old'], ['new']));
});

test('isExactBundleStep accepts only order-kept additions or removals', TIMEOUT, () => {
  const yes: [string[], string[]][] = [
    [[], []],
    [['a'], ['a']],
    [['a'], ['a', 'b']],
    [['a'], ['a', 'b', 'c']],
    [['b'], ['a', 'b']],
    [
      ['a', 'c'],
      ['a', 'b', 'c'],
    ],
    [['a', 'b'], ['b']],
    [
      ['a', 'b', 'c'],
      ['a', 'c'],
    ],
    [['a', 'b'], []],
  ];
  const no: [string[], string[]][] = [
    [
      ['a', 'b'],
      ['b', 'a'],
    ],
    [
      ['a', 'b'],
      ['b', 'a', 'c'],
    ],
    [
      ['a', 'b'],
      ['a', 'c'],
    ],
    [['a', 'b'], ['c']],
    [
      ['a', 'b', 'c'],
      ['c', 'a'],
    ],
    [['a'], ['b']],
  ];
  for (const [prev, next] of yes) assert.ok(isExactBundleStep(prev, next), `${prev} -> ${next}`);
  for (const [prev, next] of no) assert.ok(!isExactBundleStep(prev, next), `${prev} -> ${next}`);
});

test('bundlePem is the byte-exact concatenation, each PEM ending in one newline', TIMEOUT, () => {
  const a = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
  const b = '-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n';
  assert.equal(bundlePem([a, b]), a + b);
  assert.equal(bundlePem([b, a]), b + a);
  assert.equal(bundlePem([a.trimEnd(), `${b}\n\n`]), a + b);
  assert.equal(bundlePem([]), '');
  // Appending a root appends bytes: the old bundle is a prefix of the new one.
  assert.ok(bundlePem([a, b]).startsWith(bundlePem([a])));
});
