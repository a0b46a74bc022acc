// The pools of semantic addresses from flags and environment: defaults that do not overlap,
// `off` for a kind the operator does not want, a coded error naming both flags of an overlap.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseServerConfig, vipPoolsOf } from '../src/config.ts';

const BASE = ['--state-dir', '/tmp/meshrelay-vip-pools-config'];

test('given no pool flags, when parsed, then each kind of address has its own default range', () => {
  assert.deepEqual(vipPoolsOf(parseServerConfig(BASE, {})), {
    virtualDestination: '10.30.0.0/16',
    roundRobin: '10.31.0.0/16',
    closest: '10.32.0.0/16',
    instance: '10.33.0.0/16',
  });
});

test('given off for round robin by flag and for instances by environment, when parsed, then those pools are empty', () => {
  const pools = vipPoolsOf(
    parseServerConfig([...BASE, '--vip-cidr-round-robin', 'off'], { MESHRELAY_INSTANCE_CIDR: 'off' }),
  );
  assert.equal(pools.roundRobin, '');
  assert.equal(pools.instance, '');
  assert.equal(pools.closest, '10.32.0.0/16');
});

test('given an instance pool inside the VIP pool, when parsed, then a coded error names both flags', () => {
  assert.throws(
    () => parseServerConfig([...BASE, '--instance-cidr', '10.30.1.0/24'], {}),
    (err: { code?: string; message: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.includes('--vip-cidr (MESHRELAY_VIP_CIDR)') &&
      err.message.includes('--instance-cidr (MESHRELAY_INSTANCE_CIDR)'),
  );
});

test('given a closest pool that is not a CIDR, when parsed, then a coded error names the flag', () => {
  assert.throws(
    () => parseServerConfig([...BASE, '--vip-cidr-closest', '10.32.0.0'], {}),
    (err: { code?: string; message: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.startsWith('--vip-cidr-closest (MESHRELAY_VIP_CIDR_CLOSEST):'),
  );
});
