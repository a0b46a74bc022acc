import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  decodeVipTable,
  encodeVipTable,
  reconcileVips,
  vipAddresses,
  type VipAllocation,
  type VipDemand,
} from './vip-ownership.ts';
import type { VipPools } from '@meshrelay/translator';

/** Durable VIP allocations: the file store below, or the ConfigMap store (kubernetes-vip-allocations.ts). */
export interface VipAllocationStore {
  /**
   * Brings the allocations in line with `demand` (see reconcileVips: new keys get an address,
   * keys no owner declares any more are released, nothing changes for absent clusters), persists
   * the result when it changed, and returns the address of every allocated key.
   */
  reconcile(demand: VipDemand): Promise<ReadonlyMap<string, string>>;
}

/**
 * Durable VirtualDestination VIP allocations (DESIGN §2): allocated once, kept
 * across restarts, resyncs, disconnects and scaling, released only when no cluster
 * declares the VirtualDestination any more (vip-ownership.ts). Stored as a JSON map in the state
 * directory next to the registry; re-read before each allocation so replicas
 * sharing the directory see each other's allocations.
 */
export class VipAllocations implements VipAllocationStore {
  readonly #path: string;
  readonly #cidr: string | Partial<VipPools>;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(path: string, cidr: string | Partial<VipPools>) {
    this.#path = path;
    this.#cidr = cidr;
  }

  reconcile(demand: VipDemand): Promise<ReadonlyMap<string, string>> {
    const run = async (): Promise<ReadonlyMap<string, string>> => {
      const existing = await this.#read();
      const next = reconcileVips(existing, demand, this.#cidr);
      if (encodeVipTable(next) !== encodeVipTable(existing)) await this.#write(next);
      return vipAddresses(next);
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #read(): Promise<Map<string, VipAllocation>> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    return decodeVipTable(text, `file ${this.#path}`);
  }

  async #write(table: ReadonlyMap<string, VipAllocation>): Promise<void> {
    await mkdir(dirname(this.#path), { recursive: true });
    const tmp = `${this.#path}.${randomUUID()}.tmp`;
    await writeFile(tmp, encodeVipTable(table));
    await rename(tmp, this.#path);
  }
}
