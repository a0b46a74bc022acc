import { deepFreeze, type KubernetesCluster } from '@meshrelay/api';
import type { RegistryChange } from './cluster-registry.ts';

/**
 * The in-memory copy of the registry that every ClusterRegistry serves reads
 * from, and the one place that turns record changes into RegistryChange events.
 * Records are frozen copies; callers may keep them.
 */
export class ClusterCache {
  readonly #clusters = new Map<string, KubernetesCluster>();
  readonly #listeners = new Set<(change: RegistryChange) => void>();

  get(name: string): KubernetesCluster | undefined {
    return this.#clusters.get(name);
  }

  has(name: string): boolean {
    return this.#clusters.has(name);
  }

  names(): string[] {
    return [...this.#clusters.keys()];
  }

  /** Every record, sorted by name. */
  list(): readonly KubernetesCluster[] {
    return [...this.#clusters.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  onChange(listener: (change: RegistryChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Replaces (or, with undefined, removes) a record and tells the listeners.
   * Unchanged content emits nothing. A new uid under a known name is a new
   * registration: listeners hear `deregistered` first, so the old
   * registration's certificates stop working, then `registered`.
   */
  apply(name: string, cluster: KubernetesCluster | undefined): void {
    const before = this.#clusters.get(name);
    if (cluster === undefined) {
      if (!before) return;
      this.#clusters.delete(name);
      this.#emit({ type: 'deregistered', name });
      return;
    }
    if (before && JSON.stringify(before) === JSON.stringify(cluster)) return;
    const frozen = deepFreeze(structuredClone(cluster));
    this.#clusters.set(name, frozen);
    const sameRegistration = before !== undefined && before.metadata.uid === cluster.metadata.uid;
    if (before && !sameRegistration) this.#emit({ type: 'deregistered', name });
    this.#emit({ type: sameRegistration ? 'updated' : 'registered', cluster: frozen });
  }

  #emit(change: RegistryChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
