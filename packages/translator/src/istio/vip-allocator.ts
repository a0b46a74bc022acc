/**
 * Virtual IP allocation for VirtualDestinations. Pure: the same existing allocations and
 * wanted keys give the same result on every replica; the caller stores the result.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { KINDS, MeshrelayError, isKind, type InputSnapshot } from '@meshrelay/api';

export const DEFAULT_VIP_CIDR = '10.30.0.0/16';

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
 * Returns every existing allocation unchanged plus an address for each wanted key that has
 * none: the first free address probing linearly (wrapping) from an offset derived from
 * sha256(key). New keys are allocated in sorted order, so the result does not depend on the
 * order of `wanted`. Throws MESHRELAY_ERR_INVALID_CONFIG for a malformed CIDR and when the
 * pool has no free address left (the configured pool is too small).
 */
export function allocateVips(
  existing: ReadonlyMap<string, string>,
  wanted: readonly string[],
  cidr: string = DEFAULT_VIP_CIDR,
): Map<string, string> {
  const pool = parseCidr(cidr);
  const result = new Map(existing);
  const used = new Set(existing.values());
  for (const key of [...new Set(wanted)].sort()) {
    if (result.has(key)) continue;
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
 * The `<namespace>/<name>` of every VirtualDestination in the inputs, sorted and unique: the keys translate() looks
 * VIPs up by.
 */
export function virtualDestinationKeys(inputs: ReadonlyMap<string, InputSnapshot>): string[] {
  const keys = new Set<string>();
  for (const snapshot of inputs.values()) {
    for (const r of snapshot.resources)
      if (isKind(r, KINDS.VirtualDestination)) keys.add(`${r.metadata.namespace ?? ''}/${r.metadata.name}`);
  }
  return [...keys].sort();
}
