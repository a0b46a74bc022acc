import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideLease, releasedLease, type LeaseRecord } from '../src/index.ts';

const held: LeaseRecord = {
  holder: 'a',
  acquireTimeMs: 1_000,
  renewTimeMs: 5_000,
  leaseDurationMs: 3_000,
  transitions: 2,
};

const CASES: readonly {
  name: string;
  current: LeaseRecord | undefined;
  who: string;
  now: number;
  want: ReturnType<typeof decideLease>;
}[] = [
  {
    name: 'no lease: create',
    current: undefined,
    who: 'b',
    now: 10,
    want: {
      action: 'create',
      record: { holder: 'b', acquireTimeMs: 10, renewTimeMs: 10, leaseDurationMs: 4_000, transitions: 0 },
    },
  },
  {
    name: 'own lease: renew, keep acquireTime',
    current: held,
    who: 'a',
    now: 6_000,
    want: { action: 'renew', record: { ...held, renewTimeMs: 6_000, leaseDurationMs: 4_000 } },
  },
  {
    name: 'own lease past expiry: still renew',
    current: held,
    who: 'a',
    now: 20_000,
    want: { action: 'renew', record: { ...held, renewTimeMs: 20_000, leaseDurationMs: 4_000 } },
  },
  {
    name: "another's valid lease: wait for its expiry",
    current: held,
    who: 'b',
    now: 7_999,
    want: { action: 'wait', expiresAtMs: 8_000 },
  },
  {
    name: "another's lease at expiry: take over",
    current: held,
    who: 'b',
    now: 8_000,
    want: {
      action: 'takeover',
      record: { holder: 'b', acquireTimeMs: 8_000, renewTimeMs: 8_000, leaseDurationMs: 4_000, transitions: 3 },
    },
  },
  {
    name: 'released lease: take over at once',
    current: releasedLease(held, 6_000),
    who: 'b',
    now: 6_001,
    want: {
      action: 'takeover',
      record: { holder: 'b', acquireTimeMs: 6_001, renewTimeMs: 6_001, leaseDurationMs: 4_000, transitions: 3 },
    },
  },
];

for (const c of CASES) {
  test(`given ${c.name.split(':')[0]}, when deciding, then ${c.name.split(': ')[1]}`, () => {
    assert.deepEqual(decideLease(c.current, c.who, c.now, 4_000), c.want);
  });
}
