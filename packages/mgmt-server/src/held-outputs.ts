import type { OutputSnapshot } from '@meshrelay/api';
import type { HeldOutputView } from '@meshrelay/registry';

/** The server's record of a held output: the API's HeldOutputView with `since` as a Date. */
export type HeldOutput = Omit<HeldOutputView, 'since'> & { readonly since: Date };

/**
 * Outputs the blast-radius guard is holding back, per cluster, and the output
 * hashes an operator released. A release applies to the exact hash that was
 * held; a later, different output is assessed afresh.
 */
export class HeldOutputs {
  readonly #held = new Map<string, HeldOutput>();
  readonly #released = new Map<string, string>();
  readonly #listeners = new Set<(cluster: string) => void>();
  readonly #releaseListeners = new Set<(cluster: string) => void>();

  hold(entry: Omit<HeldOutput, 'since'>, now: Date): void {
    const prev = this.#held.get(entry.cluster);
    this.#held.set(entry.cluster, { ...entry, since: prev?.since ?? now });
    this.#emit(entry.cluster);
  }

  /** The output reached the agent (or nothing is pending any more): not held. */
  clear(cluster: string): void {
    if (this.#held.delete(cluster)) this.#emit(cluster);
  }

  isReleased(output: OutputSnapshot): boolean {
    return this.#released.get(output.cluster) === output.hash;
  }

  /** Releases the held output of a cluster; returns it, or undefined when none is held. */
  release(cluster: string): HeldOutput | undefined {
    const held = this.#held.get(cluster);
    if (!held) return undefined;
    this.#released.set(cluster, held.hash);
    this.#held.delete(cluster);
    this.#emit(cluster);
    for (const listener of this.#releaseListeners) listener(cluster);
    return held;
  }

  get(cluster: string): HeldOutput | undefined {
    return this.#held.get(cluster);
  }

  list(): HeldOutput[] {
    return [...this.#held.values()].sort((a, b) => (a.cluster < b.cluster ? -1 : 1));
  }

  forget(cluster: string): void {
    this.#released.delete(cluster);
    this.clear(cluster);
  }

  /** Called after an operator released a cluster's held output. */
  onRelease(listener: (cluster: string) => void): () => void {
    this.#releaseListeners.add(listener);
    return () => this.#releaseListeners.delete(listener);
  }

  /** Called on every hold, clear and release (for metrics and the UI). */
  onChange(listener: (cluster: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(cluster: string): void {
    for (const listener of this.#listeners) listener(cluster);
  }
}
