import type { OutputSnapshot } from '@meshrelay/api';

/**
 * The latest output snapshot per cluster on this replica, and who is waiting
 * for the next one. Publishing an output with the hash already held is a no-op,
 * so an unchanged translation never reaches an agent.
 */
export class OutputHub {
  readonly #outputs = new Map<string, OutputSnapshot>();
  readonly #listeners = new Map<string, Set<(output: OutputSnapshot) => void>>();

  current(cluster: string): OutputSnapshot | undefined {
    return this.#outputs.get(cluster);
  }

  all(): ReadonlyMap<string, OutputSnapshot> {
    return this.#outputs;
  }

  /** Returns true when the output was new (its hash differs from the held one). */
  publish(output: OutputSnapshot): boolean {
    if (this.#outputs.get(output.cluster)?.hash === output.hash) return false;
    this.#outputs.set(output.cluster, output);
    for (const listener of this.#listeners.get(output.cluster) ?? []) listener(output);
    return true;
  }

  /**
   * Replaces the held output by one with the same hash (same content) whose
   * provenance differs, e.g. a contribution that turned stale or fresh again.
   * Agents are not notified: their content is unchanged.
   */
  refresh(output: OutputSnapshot): void {
    if (this.#outputs.get(output.cluster)?.hash === output.hash) this.#outputs.set(output.cluster, output);
  }

  /** Seeds an output read back from the store, without notifying (nothing changed). */
  seed(output: OutputSnapshot): void {
    if (!this.#outputs.has(output.cluster)) this.#outputs.set(output.cluster, output);
  }

  forget(cluster: string): void {
    this.#outputs.delete(cluster);
  }

  /** Clusters with an output or a subscriber held here (bounded-memory checks). */
  trackedClusters(): number {
    return new Set([...this.#outputs.keys(), ...this.#listeners.keys()]).size;
  }

  subscribe(cluster: string, listener: (output: OutputSnapshot) => void): () => void {
    const set = this.#listeners.get(cluster) ?? new Set();
    set.add(listener);
    this.#listeners.set(cluster, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(cluster);
    };
  }
}
