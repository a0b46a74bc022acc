import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildService, buildTestInputSnapshot, buildVirtualDestination } from '@meshrelay/testkit';
import { DEFAULT_VIP_CIDR, POLICY_ADDRESSES_ANNOTATION, allocateVips, virtualDestinationKeys } from '../src/index.ts';

function inPool(ip: string, prefix: string): boolean {
  return ip.startsWith(prefix);
}

describe('allocateVips', () => {
  it('given no existing allocations, when keys are allocated, then each gets a distinct address in the default pool', () => {
    const vips = allocateVips(new Map(), ['bookinfo/reviews', 'bookinfo/ratings', 'shop/cart'], DEFAULT_VIP_CIDR);
    assert.equal(vips.size, 3);
    assert.equal(new Set(vips.values()).size, 3);
    for (const ip of vips.values()) assert.ok(inPool(ip, '10.30.'), ip);
  });

  it('given existing allocations, when more keys are allocated, then every existing allocation is kept unchanged', () => {
    const existing = new Map([['bookinfo/reviews', '10.30.9.9']]);
    const vips = allocateVips(existing, ['bookinfo/reviews', 'bookinfo/ratings'], DEFAULT_VIP_CIDR);
    assert.equal(vips.get('bookinfo/reviews'), '10.30.9.9');
    assert.notEqual(vips.get('bookinfo/ratings'), '10.30.9.9');
  });

  it('given the same keys in a different order, when allocated, then the addresses are the same', () => {
    const a = allocateVips(new Map(), ['x/a', 'x/b', 'x/c'], '10.40.0.0/29');
    const b = allocateVips(new Map(), ['x/c', 'x/a', 'x/b'], '10.40.0.0/29');
    assert.deepEqual([...a].sort(), [...b].sort());
  });

  it('given a key, when allocated in separate runs, then its address is stable (derived from the key)', () => {
    const first = allocateVips(new Map(), ['bookinfo/reviews']).get('bookinfo/reviews');
    const again = allocateVips(new Map([['other/x', '10.30.200.1']]), ['bookinfo/reviews']).get('bookinfo/reviews');
    assert.equal(first, again);
  });

  it('given a pool with one free address taken, when a key whose start address is taken is allocated, then it probes to the next free address', () => {
    const start = allocateVips(new Map(), ['x/a'], '10.40.0.0/29').get('x/a') as string;
    const vips = allocateVips(new Map([['x/other', start]]), ['x/a'], '10.40.0.0/29');
    assert.notEqual(vips.get('x/a'), start);
    assert.ok(inPool(vips.get('x/a') as string, '10.40.0.'));
  });

  it('given a /30 pool, when two keys are allocated, then the network and broadcast addresses are skipped', () => {
    const vips = allocateVips(new Map(), ['x/a', 'x/b'], '10.40.0.0/30');
    assert.deepEqual([...vips.values()].sort(), ['10.40.0.1', '10.40.0.2']);
  });

  it('given a full pool, when another key is allocated, then it fails with a coded error', () => {
    assert.throws(() => allocateVips(new Map(), ['x/a', 'x/b', 'x/c'], '10.40.0.0/30'), {
      code: 'MESHRELAY_ERR_INVALID_CONFIG',
      message: /exhausted/,
    });
  });

  for (const cidr of ['10.30.0.0', '10.30.0.0/33', '300.1.1.1/16', 'fdff:2000::/21x', '']) {
    it(`given the malformed CIDR ${JSON.stringify(cidr)}, when allocating, then it fails with a coded error`, () => {
      assert.throws(() => allocateVips(new Map(), ['x/a'], cidr), { code: 'MESHRELAY_ERR_INVALID_CONFIG' });
    });
  }

  it('given inputs with VirtualDestinations in several clusters, one opted in to policy addresses, when listing keys, then each namespace/name appears once and only the opted-in one has policy keys, sorted', () => {
    const vd = (name: string, policyAddresses = false): ReturnType<typeof buildVirtualDestination> => {
      const built = buildVirtualDestination({
        name,
        namespace: 'bookinfo',
        hosts: [`${name}.global`],
        services: [{ name }],
        ports: [{ number: 80, protocol: 'HTTP' }],
      });
      if (!policyAddresses) return built;
      return { ...built, metadata: { ...built.metadata, annotations: { [POLICY_ADDRESSES_ANNOTATION]: 'true' } } };
    };
    const inputs = new Map([
      [
        'b',
        buildTestInputSnapshot('b', [
          vd('reviews', true),
          buildService({ name: 'reviews', namespace: 'bookinfo', ports: [{ name: 'http', port: 80 }] }),
        ]),
      ],
      ['a', buildTestInputSnapshot('a', [vd('ratings'), vd('reviews', true)])],
    ]);
    assert.deepEqual(virtualDestinationKeys(inputs), [
      'bookinfo/ratings',
      'bookinfo/reviews',
      'closest:bookinfo/reviews',
      'round-robin:bookinfo/reviews',
    ]);
  });
});
