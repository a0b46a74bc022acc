import type { InputSnapshot, OutputSnapshot } from '@meshrelay/api';
import { versionOfInput, type InputVersion } from './input-version.ts';
import type { InputChangedListener, SnapshotStore, StoreHealth } from './snapshot-store.ts';

const MEMORY_HEALTH: StoreHealth = Object.freeze({ backend: 'memory', redisUp: false, pendingWriteBack: 0 });

/**
 * A store for a single replica with no shared cache (development, tests, one-replica setups).
 * There are no other replicas, so onInputChanged never fires, and its health never changes.
 */
export function createMemorySnapshotStore(): SnapshotStore {
  return new MemorySnapshotStore();
}

class MemorySnapshotStore implements SnapshotStore {
  readonly #inputs = new Map<string, InputSnapshot>();
  readonly #outputs = new Map<string, OutputSnapshot>();

  putInput(snapshot: InputSnapshot): Promise<void> {
    this.#inputs.set(snapshot.cluster, snapshot);
    return Promise.resolve();
  }

  getInput(cluster: string): Promise<InputSnapshot | undefined> {
    return Promise.resolve(this.#inputs.get(cluster));
  }

  inputVersion(cluster: string): Promise<InputVersion | undefined> {
    const held = this.#inputs.get(cluster);
    return Promise.resolve(held && versionOfInput(held));
  }

  memoryInputs(): ReadonlyMap<string, InputSnapshot> {
    return new Map(this.#inputs);
  }

  loadInputs(clusters: readonly string[]): Promise<ReadonlyMap<string, InputSnapshot>> {
    const found = new Map<string, InputSnapshot>();
    for (const cluster of clusters) {
      const snapshot = this.#inputs.get(cluster);
      if (snapshot) found.set(cluster, snapshot);
    }
    return Promise.resolve(found);
  }

  deleteInput(cluster: string): Promise<void> {
    this.#inputs.delete(cluster);
    return Promise.resolve();
  }

  bookkeepingSize(): number {
    return 0;
  }

  putOutput(snapshot: OutputSnapshot): Promise<boolean> {
    this.#outputs.set(snapshot.cluster, snapshot);
    return Promise.resolve(true);
  }

  getOutput(cluster: string): Promise<OutputSnapshot | undefined> {
    return Promise.resolve(this.#outputs.get(cluster));
  }

  deleteOutput(cluster: string): Promise<void> {
    this.#outputs.delete(cluster);
    return Promise.resolve();
  }

  onInputChanged(_listener: InputChangedListener): () => void {
    return () => {};
  }

  health(): StoreHealth {
    return { ...MEMORY_HEALTH };
  }

  onHealthChange(): () => void {
    return () => {};
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
