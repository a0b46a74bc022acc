import type { InputSnapshot } from '@meshrelay/api';
import type { DiscoveryProvider } from '../discovery/discovery-provider.ts';
import type { InputProblem } from '../discovery/input-problem.ts';

/**
 * A DiscoveryProvider that builds a fresh inner provider on every start and
 * drops it on stop, so discovery can be started and stopped as leadership comes
 * and goes. Every inner provider picks its own random epoch, so each leadership
 * term pushes a new epoch whose generations start at 1: the management server
 * accepts it as newer than whatever the previous leader pushed, and never sees
 * an older generation of a known epoch. Listeners registered here survive restarts.
 */
export class LeaderTermProvider implements DiscoveryProvider {
  readonly #create: () => DiscoveryProvider;
  readonly #listeners = new Set<(snapshot: InputSnapshot) => void>();
  #unused: DiscoveryProvider | undefined;
  #inner: DiscoveryProvider | undefined;
  #unsubscribe: (() => void) | undefined;

  /**
   * The first start() uses `initial`; every later one calls `create`. Both must
   * give providers that were never started.
   */
  constructor(initial: DiscoveryProvider, create: () => DiscoveryProvider) {
    this.#unused = initial;
    this.#create = create;
  }

  /** Undefined while stopped: a follower holds no input of its own. */
  get current(): InputSnapshot | undefined {
    return this.#inner?.current;
  }

  get problems(): readonly InputProblem[] {
    return this.#inner?.problems ?? [];
  }

  onSnapshot(listener: (snapshot: InputSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts a new inner provider (a no-op while one runs); on failure it is stopped and dropped. */
  async start(): Promise<void> {
    if (this.#inner) return;
    const inner = this.#unused ?? this.#create();
    this.#unused = undefined;
    this.#inner = inner;
    this.#unsubscribe = inner.onSnapshot((snapshot) => {
      for (const listener of this.#listeners) listener(snapshot);
    });
    try {
      await inner.start();
    } catch (err) {
      if (this.#inner === inner) await this.stop();
      throw err;
    }
    // Stopped while starting: stop again, for whatever start() set up after the first stop.
    if (this.#inner !== inner) await inner.stop();
  }

  async stop(): Promise<void> {
    const inner = this.#inner;
    this.#inner = undefined;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    await inner?.stop();
  }
}
