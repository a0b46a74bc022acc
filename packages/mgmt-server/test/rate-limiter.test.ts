import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailureRateLimiter, type AttemptDecision } from '../src/rate-limiter.ts';

const KEYS = [
  { key: 'source:1.2.3.4', maxFailures: 3 },
  { key: 'network:1.2.3.0/24', maxFailures: 12 },
];

function admitted(decision: AttemptDecision) {
  assert.ok(decision.admitted, 'expected the attempt to be admitted');
  return decision.attempt;
}

test('given a limit of 3, when 10 attempts start before any is decided, then only 3 are admitted', () => {
  const limiter = new FailureRateLimiter(60_000);
  const decisions = Array.from({ length: 10 }, () => limiter.tryAttempt(KEYS, 0));
  assert.equal(decisions.filter((d) => d.admitted).length, 3);
});

test('given 3 failed attempts, when the next one comes within the window, then it waits until the oldest failure leaves it', () => {
  const limiter = new FailureRateLimiter(60_000);
  for (const at of [0, 1000, 2000]) admitted(limiter.tryAttempt(KEYS, at)).fail();
  const refused = limiter.tryAttempt(KEYS, 5000);
  assert.deepEqual(refused, { admitted: false, retryAfterMs: 55_000 });
  assert.equal(limiter.tryAttempt(KEYS, 60_000).admitted, true);
});

test('given 2 failures, when an attempt succeeds, then the failures are forgotten', () => {
  const limiter = new FailureRateLimiter(60_000);
  for (const at of [0, 1]) admitted(limiter.tryAttempt(KEYS, at)).fail();
  admitted(limiter.tryAttempt(KEYS, 2)).succeed();
  for (let i = 0; i < 3; i++) admitted(limiter.tryAttempt(KEYS, 3)).fail();
  assert.equal(limiter.tryAttempt(KEYS, 4).admitted, false);
});

test('given an attempt decided twice, when counted, then it counts once', () => {
  const limiter = new FailureRateLimiter(60_000);
  const keys = [{ key: 'source:1.2.3.4', maxFailures: 2 }];
  const attempt = admitted(limiter.tryAttempt(keys, 0));
  attempt.fail();
  attempt.fail();
  assert.equal(limiter.tryAttempt(keys, 1).admitted, true);
});

test('given keys with different limits, when one reaches its own, then attempts naming it wait and the others do not', () => {
  const limiter = new FailureRateLimiter(60_000);
  const network = { key: 'network:1.2.3.0/24', maxFailures: 4 };
  for (let host = 1; host <= 4; host++)
    admitted(limiter.tryAttempt([{ key: `source:1.2.3.${host}`, maxFailures: 3 }, network], 0)).fail();

  const sameNetwork = limiter.tryAttempt([{ key: 'source:1.2.3.99', maxFailures: 3 }, network], 1);
  const otherNetwork = limiter.tryAttempt(
    [
      { key: 'source:1.2.4.1', maxFailures: 3 },
      { key: 'network:1.2.4.0/24', maxFailures: 4 },
    ],
    1,
  );

  assert.deepEqual(sameNetwork, { admitted: false, retryAfterMs: 59_999 });
  assert.equal(otherNetwork.admitted, true);
});
