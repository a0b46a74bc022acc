import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamAdmission, type AdmissionDecision } from '../src/relay/stream-admission.ts';

const retryAfter = (d: AdmissionDecision): number => {
  assert.equal(d.admitted, false);
  return d.admitted ? 0 : d.retryAfterMs;
};

test('given an empty bucket, when a crowd of clusters arrives, then each is given its own later slot, one slot apart', () => {
  const admission = new StreamAdmission({ ratePerSecond: 4, random: () => 0 });
  for (let i = 0; i < 4; i++) assert.deepEqual(admission.admit(`c${i}`, 0), { admitted: true, paid: true });
  const hints = Array.from({ length: 6 }, (_, i) => retryAfter(admission.admit(`late${i}`, 0)));
  assert.deepEqual(hints, [250, 500, 750, 1000, 1250, 1500]);
});

test('given a cluster admitted a moment ago, when its second stream arrives, then it rides on the same admission', () => {
  const admission = new StreamAdmission({ ratePerSecond: 1 });
  assert.deepEqual(admission.admit('east', 0), { admitted: true, paid: true });
  assert.deepEqual(admission.admit('east', 10), { admitted: true, paid: false });
  assert.equal(admission.admit('west', 10).admitted, false);
});

test('given a refused cluster, when its other stream is refused too, then both get the same slot', () => {
  const admission = new StreamAdmission({ ratePerSecond: 2, random: () => 0.5 });
  admission.admit('a', 0);
  admission.admit('b', 0);
  const push = retryAfter(admission.admit('east', 0));
  assert.equal(retryAfter(admission.admit('east', 1)), push - 1);
  assert.ok(retryAfter(admission.admit('west', 1)) > push, 'the next cluster waits for the next slot');
});

test('given its slot has come, when the paced cluster returns, then a refilled token admits it', () => {
  const admission = new StreamAdmission({ ratePerSecond: 2, random: () => 0 });
  admission.admit('a', 0);
  admission.admit('b', 0);
  const wait = retryAfter(admission.admit('east', 0));
  assert.deepEqual(admission.admit('east', wait), { admitted: true, paid: true });
});
