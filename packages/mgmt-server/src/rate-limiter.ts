/**
 * Counts failures per key in a sliding window. Once a key has `maxFailures`
 * inside `windowMs`, it is blocked until the oldest failure leaves the window.
 * Memory is bounded by pruning keys whose window is empty.
 */
export class FailureRateLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #failures = new Map<string, number[]>();

  constructor(maxFailures: number, windowMs: number) {
    this.#maxFailures = maxFailures;
    this.#windowMs = windowMs;
  }

  /** Milliseconds until the key may try again; 0 when it is not blocked. */
  retryAfterMs(key: string, nowMs: number): number {
    const recent = this.#recent(key, nowMs);
    if (recent.length < this.#maxFailures) return 0;
    return (recent[recent.length - this.#maxFailures] as number) + this.#windowMs - nowMs;
  }

  recordFailure(key: string, nowMs: number): void {
    const recent = this.#recent(key, nowMs);
    recent.push(nowMs);
    this.#failures.set(key, recent);
    if (this.#failures.size > 10_000) this.#prune(nowMs);
  }

  recordSuccess(key: string): void {
    this.#failures.delete(key);
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
