import type { InputSnapshot, OutputSnapshot } from '@meshrelay/api';
import type { InputVersion } from './input-version.ts';

/** Another replica stored (or deleted) a cluster's input snapshot. */
export interface InputChangedEvent {
  readonly cluster: string;
  /** The stored snapshot's hash; '' when `deleted`. */
  readonly hash: string;
  /** The stored snapshot's agent epoch and generation (absent when deleted, or sent by an older replica). */
  readonly epoch?: string;
  readonly generation?: number;
  /** The id of the replica that made the change. */
  readonly replica: string;
  readonly deleted: boolean;
}

export interface StoreHealth {
  /** 'memory': no shared cache at all; 'redis': memory plus Redis. */
  readonly backend: 'memory' | 'redis';
  /** Whether the Redis connection is usable now; always false for the memory backend. */
  readonly redisUp: boolean;
  /** Memory changes (puts and deletes) that Redis has not seen yet and will get on write-back. */
  readonly pendingWriteBack: number;
}

export type InputChangedListener = (event: InputChangedEvent) => void;
export type HealthListener = (health: StoreHealth) => void;

/**
 * Where a management replica keeps the latest input snapshot of each cluster and the last output
 * snapshot computed for it. Memory is the working copy; a shared cache (Redis) lets another
 * replica pick a cluster up. Redis is never required: while it is down every method still works
 * on memory, nothing that memory holds is lost, and what Redis missed is written back when it
 * returns.
 *
 * All methods may be called concurrently. Memory changes take effect synchronously, in call order,
 * before the returned promise settles; the Redis side follows in the same order. Snapshots handed
 * in and out are frozen values and are never copied or mutated by the store. No method rejects
 * because Redis is down, slow or holds bad data.
 */
export interface SnapshotStore {
  /**
   * Stores `snapshot` as its cluster's input, replacing whatever memory held (ordering between
   * snapshots is the caller's decision), then writes it to Redis and tells the other replicas.
   * Redis down: memory is updated, the change is kept for write-back, and nothing is published
   * until the write-back. When Redis holds a newer snapshot of the same epoch (a higher
   * generation), Redis is left alone and memory takes that newer snapshot.
   */
  putInput(snapshot: InputSnapshot): Promise<void>;

  /**
   * The cluster's input: memory first, else Redis (decoded, its hash verified, then kept in
   * memory). A Redis entry that cannot be decoded or fails its hash is logged and treated as
   * absent. Redis down: memory only. Resolves undefined when neither holds one.
   */
  getInput(cluster: string): Promise<InputSnapshot | undefined>;

  /**
   * The epoch, generation, hash and size of the cluster's input, without reading or decoding the
   * snapshot: memory first, else the small version key Redis keeps beside the value. Undefined
   * when neither holds one, a delete is pending, Redis is down, or the version is missing or
   * unreadable (a value written before versions named their hash) — never a guess.
   */
  inputVersion(cluster: string): Promise<InputVersion | undefined>;

  /**
   * Every input held in memory now: a new map per call (the caller may change the map, not the snapshots). Never
   * touches Redis.
   */
  memoryInputs(): ReadonlyMap<string, InputSnapshot>;

  /**
   * The inputs of `clusters` that memory or Redis holds (as getInput, with one Redis round trip);
   * names neither holds are missing from the result. The map is new per call. Redis down: memory only.
   */
  loadInputs(clusters: readonly string[]): Promise<ReadonlyMap<string, InputSnapshot>>;

  /**
   * Removes the cluster's input from memory and Redis and tells the other replicas. Redis down: kept for write-back.
   */
  deleteInput(cluster: string): Promise<void>;

  /**
   * Stores the cluster's output (with its provenance) in memory and Redis. Resolves true when the
   * shared cache took it (or there is none), false when Redis was down or did not answer in time:
   * the output is then kept for write-back.
   */
  putOutput(snapshot: OutputSnapshot): Promise<boolean>;

  /** As getInput, for the cluster's last output. */
  getOutput(cluster: string): Promise<OutputSnapshot | undefined>;

  /** Removes the cluster's output from memory and Redis. Redis down: kept for write-back. */
  deleteOutput(cluster: string): Promise<void>;

  /**
   * Calls `listener` after another replica changed an input, once this store's memory reflects
   * the change (so getInput returns the new snapshot, unless memory held a newer one of the same
   * epoch). Changes made through this store are not reported. Returns the unsubscribe function.
   * A listener that throws is logged and does not stop the others.
   */
  onInputChanged(listener: InputChangedListener): () => void;

  /**
   * Entries the store keeps besides the snapshots (per-key change marks, clusters awaiting
   * write-back). Bounded by the clusters it holds or is syncing; for bounded-memory checks.
   */
  bookkeepingSize(): number;

  /** The store's state now; a new object per call. */
  health(): StoreHealth;

  /** Calls `listener` with the new health each time any field of it changes. Returns the unsubscribe function. */
  onHealthChange(listener: HealthListener): () => void;

  /**
   * Closes Redis connections and drops listeners. Memory stays readable; later changes stay in
   * memory only. Idempotent.
   */
  close(): Promise<void>;
}
