/** An attempt admitted by the limiter; exactly one of its methods is called once it is decided. */
export interface LimitedAttempt {
  /** The attempt failed: it stays counted as a failure for the window. */
  fail(): void;
  /** The attempt succeeded: the keys' failures are forgotten. */
  succeed(): void;
}

/** A key attempts are counted under, and how many failures it may have inside the window. */
export interface LimitKey {
  readonly key: string;
  readonly maxFailures: number;
}

export type AttemptDecision =
  | { readonly admitted: true; readonly attempt: LimitedAttempt }
  | { readonly admitted: false; readonly retryAfterMs: number };

/**
 * Counts failures per key in a sliding window. Once a key has its `maxFailures` inside `windowMs`,
 * it is blocked until the oldest failure leaves the window. Attempts still in flight count as
 * failures until they are decided: admission and counting happen in one synchronous step, so
 * any number of concurrent attempts lets at most `maxFailures` reach the check being guarded.
 * Memory is bounded by pruning keys whose window is empty.
 */
export class FailureRateLimiter {
  readonly #windowMs: number;
  readonly #failures = new Map<string, number[]>();
  readonly #inFlight = new Map<string, number>();

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Admits an attempt for every key at once, or says how long to wait when any key is at its limit. */
  tryAttempt(limits: readonly LimitKey[], nowMs: number): AttemptDecision {
    const wait = Math.max(0, ...limits.map((l) => this.#retryAfterMs(l, nowMs)));
    if (wait > 0) return { admitted: false, retryAfterMs: wait };
    const keys = limits.map((l) => l.key);
    for (const k of keys) this.#inFlight.set(k, (this.#inFlight.get(k) ?? 0) + 1);
    let decided = false;
    const decide = (outcome: (key: string) => void): void => {
      if (decided) return;
      decided = true;
      for (const k of keys) {
        const left = (this.#inFlight.get(k) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(k, left);
        else this.#inFlight.delete(k);
        outcome(k);
      }
    };
    return {
      admitted: true,
      attempt: {
        fail: () => decide((k) => this.#recordFailure(k, nowMs)),
        succeed: () => decide((k) => this.#failures.delete(k)),
      },
    };
  }

  /** Milliseconds until the key may try again; 0 when it is not blocked. */
  #retryAfterMs({ key, maxFailures }: LimitKey, nowMs: number): number {
    const recent = this.#recent(key, nowMs);
    const pending = this.#inFlight.get(key) ?? 0;
    if (recent.length + pending < maxFailures) return 0;
    // Blocked by attempts still in flight: they are decided within a request's lifetime.
    if (recent.length < maxFailures) return Math.min(1000, this.#windowMs);
    return (recent[recent.length - maxFailures] as number) + this.#windowMs - nowMs;
  }

  #recordFailure(key: string, nowMs: number): void {
    const recent = this.#recent(key, nowMs);
    recent.push(nowMs);
    this.#failures.set(key, recent);
    if (this.#failures.size > 10_000) this.#prune(nowMs);
  }

  #recent(key: string, nowMs: number): number[] {
    return (this.#failures.get(key) ?? []).filter((t) => nowMs - t < this.#windowMs);
  }

  #prune(nowMs: number): void {
    for (const key of [...this.#failures.keys()]) {
      if (this.#recent(key, nowMs).length === 0) this.#failures.delete(key);
    }
  }
}
