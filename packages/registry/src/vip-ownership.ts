import { MeshrelayError, isRecord } from '@meshrelay/api';
import { allocateVips, vipKindOff, vipPools, type VipPools } from '@meshrelay/translator';

/**
 * One VirtualDestination's VIP and the clusters whose inputs declare it. `owners` is null for an
 * allocation stored before owners were recorded: nobody is known to have dropped it.
 */
export interface VipAllocation {
  readonly address: string;
  readonly owners: readonly string[] | null;
}

/** What the translation admitted: the evidence VIPs are kept or released on. */
export interface VipDemand {
  /** Per cluster whose current input was admitted: the `<namespace>/<name>` of each VirtualDestination in it. */
  readonly present: ReadonlyMap<string, readonly string[]>;
  /** Every registered cluster, present or not. */
  readonly registered: ReadonlySet<string>;
}

export type VipTable = ReadonlyMap<string, VipAllocation>;

/**
 * The next allocation table. A cluster stays an owner of a key until positive evidence says
 * otherwise: an admitted input of that cluster without the key, or the cluster's deregistration.
 * A cluster that is merely absent (disconnected, restarting, held by safe mode) keeps every key it
 * had, so its VIPs stay stable. An allocation left with no owner is released; its address is free
 * for a later key. An allocation of unknown owners is settled only when every registered cluster
 * is present. New keys get an address as allocateVips() gives it, from the pool of their kind
 * (`cidr`: the default VIPs' pool, or every pool); existing ones never change. Keys of a kind whose
 * pool is empty are dropped.
 */
export function reconcileVips(
  stored: VipTable,
  claimed: VipDemand,
  cidr: string | Partial<VipPools>,
): Map<string, VipAllocation> {
  // A kind of address turned off (an empty pool) is neither allocated nor kept: the operator said so.
  const pools = vipPools(cidr);
  const on = (key: string): boolean => !vipKindOff(key, pools);
  const allOn = pools.roundRobin !== '' && pools.closest !== '' && pools.instance !== '';
  const table = allOn ? stored : new Map([...stored].filter(([key]) => on(key)));
  const demand: VipDemand = allOn
    ? claimed
    : {
        registered: claimed.registered,
        present: new Map([...claimed.present].map(([cluster, keys]) => [cluster, keys.filter(on)])),
      };
  const allPresent = [...demand.registered].every((c) => demand.present.has(c));
  const owners = new Map<string, Set<string> | null>();
  for (const [key, allocation] of table) {
    const kept = allocation.owners?.filter((c) => demand.registered.has(c) && !demand.present.has(c));
    owners.set(key, kept === undefined && !allPresent ? null : new Set(kept));
  }
  for (const [cluster, keys] of demand.present) {
    for (const key of keys) {
      const set = owners.get(key);
      if (set === undefined) owners.set(key, new Set([cluster]));
      else set?.add(cluster);
    }
  }
  const survivors = new Map<string, string>();
  for (const [key, allocation] of table) if (owners.get(key)?.size !== 0) survivors.set(key, allocation.address);
  const wanted = [...owners.keys()].filter((key) => owners.get(key)?.size !== 0);
  const addresses = allocateVips(survivors, wanted, cidr);
  const next = new Map<string, VipAllocation>();
  for (const key of [...wanted].sort()) {
    const set = owners.get(key);
    next.set(key, {
      address: addresses.get(key) as string,
      owners: set === null || set === undefined ? null : [...set].sort(),
    });
  }
  return next;
}

/** The address of every key (what translate() looks VIPs up by). */
export function vipAddresses(table: VipTable): Map<string, string> {
  return new Map([...table].map(([key, allocation]) => [key, allocation.address]));
}

/** Canonical JSON of a table: sorted keys, so an unchanged table is written as the same bytes. */
export function encodeVipTable(table: VipTable): string {
  const entries = [...table].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${JSON.stringify(Object.fromEntries(entries), null, 2)}\n`;
}

/**
 * Parses a stored table. Accepts the older shape (key → address string) as allocations of unknown
 * owners. Throws MESHRELAY_ERR_INTERNAL naming `where` for anything else, so addresses are never
 * reallocated from a corrupt table.
 */
export function decodeVipTable(text: string, where: string): Map<string, VipAllocation> {
  const corrupt = (reason: string, cause?: unknown): MeshrelayError =>
    new MeshrelayError(
      'MESHRELAY_ERR_INTERNAL',
      `VIP allocations ${where} are corrupt (${reason}); refusing to reallocate addresses`,
      { cause },
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw corrupt('not JSON', err);
  }
  if (!isRecord(parsed)) throw corrupt('not a JSON object');
  const table = new Map<string, VipAllocation>();
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value === 'string') table.set(key, { address: value, owners: null });
    else if (
      isRecord(value) &&
      typeof value.address === 'string' &&
      (value.owners === null || isStringArray(value.owners))
    ) {
      table.set(key, { address: value.address, owners: value.owners });
    } else throw corrupt(`entry ${JSON.stringify(key)} is malformed`);
  }
  return table;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
