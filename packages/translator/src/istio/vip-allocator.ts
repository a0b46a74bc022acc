/**
 * Virtual IP allocation for VirtualDestinations. Pure: the same existing allocations and
 * wanted keys give the same result on every replica; the caller stores the result.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { MeshrelayError, type InputSnapshot } from '@meshrelay/api';
import { inputAddressKeys, keyPool } from './policy-vips.ts';

export const DEFAULT_VIP_CIDR = '10.30.0.0/16';

/**
 * The pool each kind of address comes from. Distinct ranges make the behaviour visible in the
 * address itself (10.31.x.x is always round robin, 10.32.x.x closest, 10.33.x.x an instance).
 */
export interface VipPools {
  /** The default VIP of each VirtualDestination. */
  readonly virtualDestination: string;
  readonly roundRobin: string;
  readonly closest: string;
  readonly instance: string;
}

export const DEFAULT_VIP_POOLS: VipPools = Object.freeze({
  virtualDestination: DEFAULT_VIP_CIDR,
  roundRobin: '10.31.0.0/16',
  closest: '10.32.0.0/16',
  instance: '10.33.0.0/16',
});

/** Pools from a single CIDR (the default VIPs' pool; the others keep their defaults) or a partial set. */
export function vipPools(pools: string | Partial<VipPools> = {}): VipPools {
  return typeof pools === 'string'
    ? { ...DEFAULT_VIP_POOLS, virtualDestination: pools }
    : { ...DEFAULT_VIP_POOLS, ...pools };
}

/** Whether `key` is of a kind the pools turn off (an empty pool; the default VIPs cannot be turned off). */
export function vipKindOff(key: string, pools: VipPools): boolean {
  return keyPool(key) !== 'default' && vipPoolOf(key, pools) === '';
}

/** The CIDR `key` is allocated from. */
function vipPoolOf(key: string, pools: VipPools): string {
  const pool = keyPool(key);
  if (pool === 'round-robin') return pools.roundRobin;
  if (pool === 'closest') return pools.closest;
  return pool === 'instance' ? pools.instance : pools.virtualDestination;
}

interface Pool {
  readonly base: number;
  /** Usable addresses: the network and broadcast addresses are skipped for prefixes shorter than /31. */
  readonly first: number;
  readonly size: number;
}

function ipToNumber(ip: string): number {
  return ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

function numberToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

function parseCidr(cidr: string): Pool {
  const match = /^([0-9.]+)\/([0-9]{1,2})$/.exec(cidr);
  const prefix = match ? Number(match[2]) : NaN;
  if (!match || !isIPv4(match[1] as string) || prefix > 32) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `VIP pool ${JSON.stringify(cidr)} is not an IPv4 CIDR such as ${DEFAULT_VIP_CIDR}`,
    );
  }
  const total = 2 ** (32 - prefix);
  const base = ipToNumber(match[1] as string) - (ipToNumber(match[1] as string) % total);
  return total > 2 ? { base, first: 1, size: total - 2 } : { base, first: 0, size: total };
}

function startOffset(key: string, size: number): number {
  const digest = createHash('sha256').update(key).digest();
  return digest.readUInt32BE(0) % size;
}

/**
 * Checks named pools (e.g. by the flag that sets each): each an IPv4 CIDR, no two sharing an
 * address. Throws MESHRELAY_ERR_INVALID_CONFIG naming the pool that is wrong, or both that overlap.
 */
export function checkVipPools(pools: Readonly<Record<string, string>>): void {
  const ranges = Object.entries(pools).map(([name, cidr]) => {
    let pool: Pool;
    try {
      pool = parseCidr(cidr);
    } catch (err) {
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `${name}: ${(err as Error).message}`, { cause: err });
    }
    const size = pool.size + (pool.first === 1 ? 2 : 0);
    return { name, cidr, from: pool.base, to: pool.base + size - 1 };
  });
  for (const [i, a] of ranges.entries())
    for (const b of ranges.slice(i + 1))
      if (a.from <= b.to && b.from <= a.to)
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_CONFIG',
          `${a.name} ${a.cidr} and ${b.name} ${b.cidr} overlap: each kind of address needs a range of its own`,
        );
}

/**
 * Returns every existing allocation unchanged plus an address for each wanted key that has
 * none, from the key's pool (see keyPool): the first free address probing linearly (wrapping)
 * from an offset derived from sha256(key), so a released key that comes back gets its old
 * address again unless another key took it meanwhile. New keys are allocated in sorted order,
 * so the result does not depend on the order of `wanted`. A string is the default VIPs' pool; a key
 * whose kind has an empty pool gets no address.
 * Throws MESHRELAY_ERR_INVALID_CONFIG for a malformed CIDR and when a pool has no free address
 * left (the configured pool is too small).
 */
export function allocateVips(
  existing: ReadonlyMap<string, string>,
  wanted: readonly string[],
  pools: string | Partial<VipPools> = DEFAULT_VIP_POOLS,
): Map<string, string> {
  const all = vipPools(pools);
  const result = new Map(existing);
  const used = new Set(existing.values());
  const parsed = new Map<string, Pool>();
  for (const key of [...new Set(wanted)].sort()) {
    if (result.has(key)) continue;
    // An empty pool turns its kind of address off: such keys get none.
    if (vipKindOff(key, all)) continue;
    const cidr = vipPoolOf(key, all);
    const pool = parsed.get(cidr) ?? parseCidr(cidr);
    parsed.set(cidr, pool);
    const start = startOffset(key, pool.size);
    let address: string | undefined;
    for (let i = 0; i < pool.size; i++) {
      const candidate = numberToIp(pool.base + pool.first + ((start + i) % pool.size));
      if (!used.has(candidate)) {
        address = candidate;
        break;
      }
    }
    if (address === undefined)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `VIP pool ${cidr} is exhausted: cannot allocate an address for ${key}`,
      );
    used.add(address);
    result.set(key, address);
  }
  return result;
}

/**
 * Every address key the inputs claim, sorted and unique: the keys translate() looks VIPs up by.
 * Per VirtualDestination `<namespace>/<name>` (its default VIP) and, when it opts in, its
 * round-robin and closest keys; per Pod labelled with an instance id, that instance's key (see policy-vips.ts).
 */
export function virtualDestinationKeys(inputs: ReadonlyMap<string, InputSnapshot>): string[] {
  const keys = new Set<string>();
  for (const snapshot of inputs.values()) for (const key of inputAddressKeys(snapshot)) keys.add(key);
  return [...keys].sort();
}
