import type { InputSnapshot } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';

/**
 * A source of input snapshots for one cluster: the `file` provider (a manifests
 * directory) or the `kubernetes` provider (informers on the API server).
 */
export interface DiscoveryProvider {
  /**
   * Reads the current state once (so `current` is set when it resolves) and then
   * follows changes. Throws MESHRELAY_ERR_INVALID_CONFIG when the source cannot be read at all
   * (the kubernetes provider: MESHRELAY_ERR_UNAVAILABLE when the API server does not list every kind in time).
   */
  start(): Promise<void>;
  /** Stops following changes; idempotent. */
  stop(): Promise<void>;
  /** The latest snapshot (immutable), or undefined before the first successful read. */
  readonly current: InputSnapshot | undefined;
  /** Problems of the latest read, in a stable order (a new array per read; do not mutate). */
  readonly problems: readonly InputProblem[];
  /**
   * Registers a listener called with every NEW snapshot (new content ⇒ generation + 1). Returns an unsubscribe
   * function.
   */
  onSnapshot(listener: (snapshot: InputSnapshot) => void): () => void;
}
