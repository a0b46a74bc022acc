import type { Logger } from 'pino';
import type { LeaderElector } from '@meshrelay/kube';

export interface LeaderDutiesOptions {
  /** The replica's elector; undefined when there is no election (this replica always leads). */
  readonly elector: LeaderElector | undefined;
  /**
   * Starts the leader-only work. `stillLeading` turns false as soon as the
   * lease is lost, so a slow start can stop before starting the next component.
   */
  readonly startDuties: (stillLeading: () => boolean) => Promise<void>;
  /** Stops the leader-only work; idempotent, and safe while startDuties is still running. */
  readonly stopDuties: () => Promise<void>;
  readonly logger: Logger;
  /** Told about every change of leadership (for metrics); must not throw. */
  readonly onLeadershipChange?: (leader: boolean) => void;
  /**
   * After the duties failed to start, the replica hands the lease on and campaigns again after this long (default 15
   * s).
   */
  readonly retryAfterFailureMs?: number;
}

/**
 * Runs the leader-only work (registration, discovery, push/pull, certificate
 * rotation, apply) exactly while this replica leads. Leadership changes are
 * applied one at a time, in order; losing the lease stops the work at once,
 * without waiting for a start still in progress. On shutdown the work stops
 * BEFORE the lease is released, so a successor never overlaps with it.
 */
export class LeaderDuties {
  readonly #opts: LeaderDutiesOptions;
  #queue: Promise<void> = Promise.resolve();
  #active = false;
  #stopping = false;
  #unsubscribe: (() => void) | undefined;
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(options: LeaderDutiesOptions) {
    this.#opts = options;
  }

  /** True while this replica leads (always, without an election). */
  get leader(): boolean {
    return this.#opts.elector?.isLeader() ?? true;
  }

  /** The lease holder last seen, when there is an election. */
  get holder(): string | undefined {
    return this.#opts.elector?.holder();
  }

  /**
   * Without an election, starts the duties now (a failure rejects). With one,
   * starts campaigning; the duties start when the lease is won.
   */
  async start(): Promise<void> {
    const { elector } = this.#opts;
    this.#stopping = false;
    if (!elector) {
      await this.#opts.startDuties(() => !this.#stopping);
      this.#active = true;
      this.#opts.onLeadershipChange?.(true);
      return;
    }
    this.#opts.onLeadershipChange?.(false);
    this.#unsubscribe ??= elector.onChange((leader) => this.#changed(leader));
    elector.start();
  }

  /** Stops the duties, then (with an election) releases the lease; idempotent. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#retryTimer);
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    await this.#enqueue(() => this.#becomeFollower());
    await this.#opts.elector?.stop();
    this.#opts.onLeadershipChange?.(false);
  }

  #changed(leader: boolean): void {
    this.#opts.onLeadershipChange?.(leader);
    if (leader) {
      void this.#enqueue(() => this.#becomeLeader());
      return;
    }
    // At once, not behind a start still in progress: a former leader must not keep pushing or applying.
    this.#opts
      .stopDuties()
      .catch((err: unknown) => this.#opts.logger.error({ err }, 'stopping the leader duties failed'));
    void this.#enqueue(() => this.#becomeFollower());
  }

  async #becomeLeader(): Promise<void> {
    const elector = this.#opts.elector;
    if (!elector?.isLeader() || this.#active || this.#stopping) return;
    this.#opts.logger.info(
      { identity: elector.identity },
      'leading: starting registration, discovery, push/pull and apply',
    );
    this.#active = true;
    try {
      await this.#opts.startDuties(() => elector.isLeader() && !this.#stopping);
    } catch (err) {
      const retryMs = this.#opts.retryAfterFailureMs ?? 15_000;
      this.#opts.logger.error({ err, retryMs }, 'the leader duties failed to start; handing the lease on');
      this.#active = false;
      await this.#opts.stopDuties().catch(() => undefined);
      await elector.stop();
      if (!this.#stopping) this.#retryTimer = setTimeout(() => !this.#stopping && elector.start(), retryMs);
    }
  }

  async #becomeFollower(): Promise<void> {
    if (!this.#active) return;
    this.#active = false;
    await this.#opts.stopDuties();
    if (this.#opts.elector && !this.#stopping)
      this.#opts.logger.info(
        { identity: this.#opts.elector.identity, holder: this.#opts.elector.holder() },
        'following: leader duties stopped',
      );
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(task);
    this.#queue = run.catch((err: unknown) => this.#opts.logger.error({ err }, 'leadership change failed'));
    return this.#queue;
  }
}
