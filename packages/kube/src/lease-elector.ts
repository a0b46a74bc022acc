import type { Logger } from 'pino';
import { validateElectionTiming, type ElectorBaseOptions, type LeaderElector } from './leader-elector.ts';
import { decideLease, releasedLease, type LeaseDecision, type LeaseRecord } from './lease-record.ts';

/** What one read-decide-write round did. */
export type LeaseUpdate =
  | { readonly outcome: 'written'; readonly record: LeaseRecord }
  | { readonly outcome: 'unchanged'; readonly record: LeaseRecord | undefined }
  /** Someone else wrote between the read and the write (a 409, a busy lock): nothing was written. */
  | { readonly outcome: 'conflict' };

/** Where a lease is kept: a Kubernetes Lease object, a lease file. */
export interface LeaseStore {
  /** Names the lease in logs, e.g. `lease gloo-mesh/meshrelay-agent-a`. */
  readonly description: string;
  /**
   * Reads the lease, asks `decide` for the record to store (undefined: write
   * nothing) and writes it only if nobody wrote since the read; otherwise
   * resolves `conflict`. Rejects on I/O failure. `decide` is synchronous and
   * may be called at most once.
   */
  update(decide: (current: LeaseRecord | undefined) => LeaseRecord | undefined): Promise<LeaseUpdate>;
}

export interface LeaseElectorOptions extends ElectorBaseOptions {
  readonly store: LeaseStore;
}

/**
 * Builds a LeaderElector over any LeaseStore (the Kubernetes and file electors
 * are this loop over their stores). Throws MESHRELAY_ERR_INVALID_CONFIG on bad timing.
 */
export function createLeaseElector(options: LeaseElectorOptions): LeaderElector {
  validateElectionTiming(options);
  return new LeaseElector(options);
}

class LeaseElector implements LeaderElector {
  readonly identity: string;
  readonly #opts: LeaseElectorOptions;
  readonly #clock: () => number;
  readonly #log: Logger;
  readonly #listeners = new Set<(leader: boolean) => void>();
  #running = false;
  #leader = false;
  #lastRenewMs = Number.NEGATIVE_INFINITY;
  #holder: string | undefined;
  #tickTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** The store call in flight, awaited by stop() so a late renewal cannot land after the release. */
  #inflight: Promise<unknown> | undefined;

  constructor(options: LeaseElectorOptions) {
    this.identity = options.identity;
    this.#opts = options;
    this.#clock = options.clock ?? Date.now;
    this.#log = options.logger.child({ lease: options.store.description, identity: options.identity });
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#log.info(
      {
        leaseDurationMs: this.#opts.leaseDurationMs,
        renewDeadlineMs: this.#opts.renewDeadlineMs,
        retryPeriodMs: this.#opts.retryPeriodMs,
      },
      'campaigning for the leader lease',
    );
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    const wasRunning = this.#running;
    this.#running = false;
    clearTimeout(this.#tickTimer);
    clearTimeout(this.#deadlineTimer);
    await this.#settleInflight();
    this.#setLeader(false, 'stopping');
    if (wasRunning && this.#holder === this.identity) await this.#release();
  }

  isLeader(): boolean {
    return this.#leader && this.#clock() - this.#lastRenewMs < this.#opts.renewDeadlineMs;
  }

  holder(): string | undefined {
    return this.#holder === '' ? undefined : this.#holder;
  }

  onChange(listener: (leader: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #schedule(delayMs: number): void {
    if (!this.#running) return;
    this.#tickTimer = setTimeout(() => {
      void this.#tick().finally(() => this.#schedule(this.#opts.retryPeriodMs));
    }, delayMs);
  }

  /** One attempt to acquire or renew; never rejects. */
  async #tick(): Promise<void> {
    const attemptMs = this.#clock();
    let decision: LeaseDecision | undefined;
    const update = this.#opts.store.update((current) => {
      decision = decideLease(current, this.identity, attemptMs, this.#opts.leaseDurationMs);
      return decision.action === 'wait' ? undefined : decision.record;
    });
    this.#inflight = update.catch(() => undefined);
    try {
      const result = await withTimeout(
        update,
        this.#opts.renewDeadlineMs,
        `${this.#opts.store.description}: no answer within the renew deadline`,
      );
      if (this.#running) this.#observe(result, decision, attemptMs);
    } catch (err) {
      const fields = { err, leader: this.#leader, sinceRenewMs: this.#clock() - this.#lastRenewMs };
      if (this.#leader) this.#log.warn(fields, 'could not renew the leader lease');
      else this.#log.debug(fields, 'could not read or acquire the leader lease');
    } finally {
      this.#inflight = undefined;
    }
  }

  #observe(result: LeaseUpdate, decision: LeaseDecision | undefined, attemptMs: number): void {
    if (result.outcome === 'conflict') {
      this.#log.debug(
        { action: decision?.action },
        'lost a race for the leader lease (written by someone else since it was read)',
      );
      return;
    }
    this.#holder = result.record?.holder;
    if (result.outcome === 'written' && result.record.holder === this.identity) {
      this.#lastRenewMs = attemptMs;
      this.#armDeadline();
      if (!this.#leader) {
        this.#log.info({ action: decision?.action, transitions: result.record.transitions }, 'became leader');
        this.#setLeader(true, 'acquired');
      }
      return;
    }
    if (this.#leader) this.#setLeader(false, `the lease is held by ${result.record?.holder || 'nobody'}`);
  }

  /** Steps down at lastRenew + renewDeadline unless a renewal lands first. */
  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    const dueMs = this.#lastRenewMs + this.#opts.renewDeadlineMs - this.#clock();
    this.#deadlineTimer = setTimeout(
      () => {
        if (!this.#leader) return;
        // A timer may fire a moment before the wall clock agrees: look again shortly.
        if (this.isLeader()) this.#armDeadline();
        else this.#setLeader(false, `no renewal for ${this.#opts.renewDeadlineMs} ms (renew deadline)`);
      },
      Math.max(1, dueMs),
    );
  }

  #setLeader(leader: boolean, reason: string): void {
    if (this.#leader === leader) return;
    this.#leader = leader;
    if (!leader) {
      clearTimeout(this.#deadlineTimer);
      // Stepping down on shutdown is routine; losing the lease while running is worth a warning.
      this.#log[this.#running ? 'warn' : 'info']({ reason }, 'stopped leading');
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(leader);
      } catch (err) {
        this.#log.error({ err }, 'leadership listener threw');
      }
    }
  }

  async #settleInflight(): Promise<void> {
    if (!this.#inflight) return;
    await withTimeout(this.#inflight, this.#opts.renewDeadlineMs, '').catch(() => undefined);
  }

  async #release(): Promise<void> {
    try {
      const result = await withTimeout(
        this.#opts.store.update((current) =>
          current?.holder === this.identity ? releasedLease(current, this.#clock()) : undefined,
        ),
        this.#opts.renewDeadlineMs,
        `${this.#opts.store.description}: release got no answer`,
      );
      if (result.outcome === 'written') {
        this.#holder = '';
        this.#log.info('released the leader lease');
      }
    } catch (err) {
      this.#log.warn({ err }, 'could not release the leader lease; it expires on its own');
    }
  }
}

/** Rejects with `message` when `promise` has not settled within `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
