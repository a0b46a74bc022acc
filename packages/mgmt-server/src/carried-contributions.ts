// DESIGN §13: the guard protects content. Each cluster's last admitted input is
// kept in the replica's durable state (the state directory every replica of a
// local plane shares), so an output never loses what a registered cluster
// contributed merely because that cluster's input is absent — also after Redis
// and every replica restarted empty.

import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { buildInputSnapshot, type InputSnapshot, type Resource } from '@meshrelay/api';

/** A cluster whose absent input is replaced by its last known one. */
export interface CarriedContribution {
  readonly cluster: string;
  /** Hash of the carried input (what stale provenance entries name). */
  readonly inputHash: string;
  readonly generation: number;
  /** When this replica started carrying it. */
  readonly since: Date;
}

/** The durable record of one cluster's last input; `releasedAt` once an operator let it go. */
interface ContributionFile {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  readonly resources: readonly Resource[];
  readonly releasedAt?: string;
}

const CHECK_INTERVAL_MS = 1000;

/**
 * The last known input of every cluster, on disk, and the set this replica is
 * carrying over now. Not thread-safe beyond Node's single loop; writes are
 * atomic (temp file + rename) so replicas sharing the directory never read a
 * torn record. Returned snapshots are frozen and must not be mutated.
 */
export class CarriedContributions {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #remembered = new Map<string, string>();
  readonly #released = new Set<string>();
  #carried = new Map<string, CarriedContribution>();
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  /** Identity (inode and mtime) of each carried record when last read, to notice another replica's change. */
  readonly #seen = new Map<string, string>();

  constructor(dir: string, logger: Logger) {
    this.#dir = dir;
    this.#logger = logger;
  }

  /** Keeps a copy of each admitted input whose hash differs from the kept one (this also ends a release). */
  async remember(inputs: Iterable<InputSnapshot>): Promise<void> {
    for (const input of inputs) {
      if (this.#remembered.get(input.cluster) === input.hash) continue;
      const record: ContributionFile = { cluster: input.cluster, epoch: input.epoch, generation: input.generation, hash: input.hash, resources: input.resources };
      await this.#write(input.cluster, record);
      this.#remembered.set(input.cluster, input.hash);
      this.#released.delete(input.cluster);
    }
  }

  /**
   * The last known inputs to carry for `absent` registered clusters: those with a
   * kept, unreleased record whose content still hashes to what was kept. Records
   * which ones are carried now (see `carried()`), starting `since` at `now`.
   */
  async carry(absent: readonly string[], now: Date): Promise<Map<string, InputSnapshot>> {
    const out = new Map<string, InputSnapshot>();
    const carried = new Map<string, CarriedContribution>();
    for (const cluster of absent) {
      const record = await this.#read(cluster);
      if (!record) continue;
      if (record.releasedAt !== undefined) {
        this.#released.add(cluster);
        continue;
      }
      const input = buildInputSnapshot({ cluster, epoch: record.epoch, generation: record.generation, resources: record.resources });
      if (input.hash !== record.hash) {
        this.#logger.error({ cluster, kept: record.hash, actual: input.hash }, 'kept contribution does not match its hash; not carried over');
        continue;
      }
      out.set(cluster, input);
      this.#seen.set(cluster, await this.#identity(cluster));
      carried.set(cluster, { cluster, inputHash: input.hash, generation: input.generation, since: this.#carried.get(cluster)?.since ?? now });
    }
    this.#carried = carried;
    this.#emit();
    return out;
  }

  /** Clusters carried over by the last translation on this replica, by name. */
  carried(): readonly CarriedContribution[] {
    return [...this.#carried.values()].sort((a, b) => (a.cluster < b.cluster ? -1 : 1));
  }

  /** True when an operator released the cluster's contribution and it has not returned since. */
  isReleased(cluster: string): boolean {
    return this.#released.has(cluster);
  }

  /**
   * An operator lets a cluster's contribution go: the next outputs are built
   * without it (a removal on positive evidence — the operator's). Returns the
   * released record's hash, or undefined when nothing is kept for the cluster.
   */
  async release(cluster: string, now: Date): Promise<string | undefined> {
    const record = await this.#read(cluster);
    if (!record || record.releasedAt !== undefined) return undefined;
    await this.#write(cluster, { ...record, releasedAt: now.toISOString() });
    this.#remembered.delete(cluster);
    this.#released.add(cluster);
    this.#logger.warn({ cluster, hash: record.hash }, 'operator released the carried contribution of a cluster');
    return record.hash;
  }

  /** Drops the record of a deregistered cluster. */
  async forget(cluster: string): Promise<void> {
    this.#remembered.delete(cluster);
    this.#released.delete(cluster);
    this.#carried.delete(cluster);
    await rm(this.#path(cluster), { force: true });
    this.#emit();
  }

  /**
   * Calls `onExternalChange` when the record of a carried cluster changed on
   * disk (another replica released it, or it returned there), so this replica
   * translates again. Checks once a second, only the carried clusters.
   */
  watch(onExternalChange: () => void): void {
    this.#timer = setInterval(() => void this.#check(onExternalChange), CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Called whenever the carried set may have changed (metrics, UI). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #check(onExternalChange: () => void): Promise<void> {
    for (const cluster of this.#carried.keys()) {
      const now = await this.#identity(cluster);
      if (this.#seen.get(cluster) === now) continue;
      this.#seen.set(cluster, now);
      onExternalChange();
      return;
    }
  }

  /** Records are replaced by rename, so a new inode means a new record. */
  async #identity(cluster: string): Promise<string> {
    return stat(this.#path(cluster)).then((s) => `${s.ino}:${s.mtimeMs}`, () => 'absent');
  }

  async #read(cluster: string): Promise<ContributionFile | undefined> {
    let text: string;
    try {
      text = await readFile(this.#path(cluster), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const record = JSON.parse(text) as ContributionFile;
    return record.cluster === cluster ? record : undefined;
  }

  async #write(cluster: string, record: ContributionFile): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const tmp = `${this.#path(cluster)}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, JSON.stringify(record));
    await rename(tmp, this.#path(cluster));
  }

  #path(cluster: string): string {
    // Cluster names are DNS labels (checked at registration), safe as file names.
    return join(this.#dir, `${cluster}.json`);
  }

  #emit(): void {
    for (const listener of this.#listeners) listener();
  }
}
