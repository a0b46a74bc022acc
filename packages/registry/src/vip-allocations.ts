import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MeshrelayError } from '@meshrelay/api';
import { allocateVips } from '@meshrelay/translator';

/** Durable VIP allocations: the file store below, or the ConfigMap store (kubernetes-vip-allocations.ts). */
export interface VipAllocationStore {
  /** Returns an allocation for every key (existing ones unchanged), persisting new ones first. */
  ensure(keys: readonly string[]): Promise<ReadonlyMap<string, string>>;
}

/**
 * Durable VirtualDestination VIP allocations (DESIGN §2): allocated once, kept
 * across restarts, resyncs and scaling. Stored as a JSON map in the state
 * directory next to the registry; re-read before each allocation so replicas
 * sharing the directory see each other's allocations.
 */
export class VipAllocations implements VipAllocationStore {
  readonly #path: string;
  readonly #cidr: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(path: string, cidr: string) {
    this.#path = path;
    this.#cidr = cidr;
  }

  /** Returns an allocation for every key (existing ones unchanged), persisting new ones first. */
  ensure(keys: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const run = async (): Promise<ReadonlyMap<string, string>> => {
      const existing = await this.#read();
      const next = allocateVips(existing, keys, this.#cidr);
      if (next.size !== existing.size) await this.#write(next);
      return next;
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #read(): Promise<Map<string, string>> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    try {
      return new Map(Object.entries(JSON.parse(text) as Record<string, string>));
    } catch (err) {
      throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `VIP allocation file ${this.#path} is corrupt; refusing to reallocate addresses`, { cause: err });
    }
  }

  async #write(map: ReadonlyMap<string, string>): Promise<void> {
    await mkdir(dirname(this.#path), { recursive: true });
    const tmp = `${this.#path}.${randomUUID()}.tmp`;
    await writeFile(tmp, `${JSON.stringify(Object.fromEntries([...map].sort()), null, 2)}\n`);
    await rename(tmp, this.#path);
  }
}
