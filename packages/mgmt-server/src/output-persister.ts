import type { Logger } from 'pino';
import type { OutputSnapshot } from '@meshrelay/api';
import type { SnapshotStore } from '@meshrelay/store';

export interface OutputPersisterOptions {
  readonly store: SnapshotStore;
  readonly logger: Logger;
  /** Called once per write the shared cache did not take (the store keeps it for write-back). */
  readonly onFailure: (cluster: string) => void;
  /** Writes in flight at once, over all clusters; default 4. */
  readonly maxInFlight?: number;
}

/**
 * Writes outputs to the store behind delivery: agents get an output from the OutputHub at once,
 * and this writes it to Redis afterwards, so a slow or hung Redis delays no agent. Bounded and
 * coalesced: at most `maxInFlight` writes run, at most one per cluster, and per cluster only the
 * newest output waits (an older pending one is replaced, never written). A write Redis did not
 * take is logged, counted, and left to the store's write-back, which retries when Redis returns.
 */
export class OutputPersister {
  readonly #o: OutputPersisterOptions;
  readonly #max: number;
  readonly #pending = new Map<string, OutputSnapshot>();
  readonly #inFlight = new Set<string>();
  readonly #idleWaiters = new Set<() => void>();

  constructor(options: OutputPersisterOptions) {
    this.#o = options;
    this.#max = options.maxInFlight ?? 4;
  }

  /** Queues `output` for writing, replacing any output of its cluster that has not started. */
  persist(output: OutputSnapshot): void {
    this.#pending.set(output.cluster, output);
    this.#pump();
  }

  /**
   * Drops a cluster's pending write (its cluster is gone); a write in flight completes, in store order before any later
   * delete.
   */
  forget(cluster: string): void {
    this.#pending.delete(cluster);
  }

  /** Writes waiting or in flight: at most two per cluster (for the bounded-memory checks). */
  size(): number {
    return this.#pending.size + this.#inFlight.size;
  }

  /** Drops every pending write and resolves once the writes in flight are done (shutdown). */
  close(): Promise<void> {
    this.#pending.clear();
    return this.idle();
  }

  /** Resolves once nothing is pending or in flight. */
  idle(): Promise<void> {
    if (this.size() === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.add(resolve));
  }

  #pump(): void {
    for (const [cluster, output] of this.#pending) {
      if (this.#inFlight.size >= this.#max) return;
      if (this.#inFlight.has(cluster)) continue;
      this.#pending.delete(cluster);
      this.#inFlight.add(cluster);
      void this.#write(output).finally(() => {
        this.#inFlight.delete(cluster);
        this.#pump();
        if (this.size() === 0) this.#wakeIdle();
      });
    }
  }

  #wakeIdle(): void {
    const waiters = [...this.#idleWaiters];
    this.#idleWaiters.clear();
    for (const resolve of waiters) resolve();
  }

  async #write(output: OutputSnapshot): Promise<void> {
    try {
      if (await this.#o.store.putOutput(output)) return;
      this.#o.logger.warn(
        { cluster: output.cluster, hash: output.hash },
        'output not written to redis; the store writes it back when redis returns',
      );
    } catch (err) {
      this.#o.logger.warn({ err, cluster: output.cluster, hash: output.hash }, 'output write to the store failed');
    }
    this.#o.onFailure(output.cluster);
  }
}
