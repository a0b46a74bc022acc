import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff, fullJitter } from '../src/backoff.ts';

/** A random source that returns the given values in turn. */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

test('given base 250 and cap 30000, when failures accumulate, then the ceiling doubles until it reaches the cap', () => {
  const backoff = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0.5 });
  const ceilings: number[] = [];
  for (let i = 0; i < 10; i++) {
    ceilings.push(backoff.ceilingMs());
    backoff.nextDelayMs();
  }
  assert.deepEqual(ceilings, [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});

test('given a random source at its extremes, when delays are drawn, then they span exactly [0, ceiling]', () => {
  const low = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0 });
  const high = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.999999999 });
  assert.deepEqual([low.nextDelayMs(), low.nextDelayMs(), low.nextDelayMs()], [0, 0, 0]);
  assert.deepEqual(
    [high.nextDelayMs(), high.nextDelayMs(), high.nextDelayMs(), high.nextDelayMs(), high.nextDelayMs()],
    [99, 199, 399, 799, 999],
  );
});

test('given full jitter, when the random source varies, then the delay is random × ceiling (not a fixed part plus jitter)', () => {
  const backoff = new Backoff({ baseMs: 1000, capMs: 1000, random: sequence(0.1, 0.5, 0.9) });
  assert.deepEqual([backoff.nextDelayMs(), backoff.nextDelayMs(), backoff.nextDelayMs()], [100, 500, 900]);
});

test('given many attempts, when the exponent overflows, then the delay stays bounded by the cap', () => {
  const backoff = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0.999 });
  let last = 0;
  for (let i = 0; i < 2000; i++) last = backoff.nextDelayMs();
  assert.ok(last <= 30_000 && last >= 29_000, `delay ${last}`);
});

test('given several failures, when reset is called, then the next ceiling is the base again', () => {
  const backoff = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0.5 });
  backoff.nextDelayMs();
  backoff.nextDelayMs();
  backoff.nextDelayMs();
  backoff.reset();
  assert.equal(backoff.attempt, 0);
  assert.equal(backoff.ceilingMs(), 250);
});

test('given a misbehaving random source, when jitter is computed, then it is clamped into [0, ceiling]', () => {
  assert.equal(
    fullJitter(1000, () => -3),
    0,
  );
  assert.equal(
    fullJitter(1000, () => 7),
    1000,
  );
});
