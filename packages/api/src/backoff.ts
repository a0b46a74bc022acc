/** A source of uniform random numbers in [0, 1); injectable so jitter is testable. */
export type RandomSource = () => number;

/** Milliseconds since some epoch; injectable so "healthy for a while" is testable. */
export type Clock = () => number;

export interface BackoffOptions {
  readonly baseMs?: number;
  readonly capMs?: number;
  readonly random?: RandomSource;
}

export const DEFAULT_BACKOFF_BASE_MS = 250;
export const DEFAULT_BACKOFF_CAP_MS = 30_000;

/**
 * Exponential backoff with FULL jitter: the n-th consecutive failure sleeps
 * random(0, min(cap, base·2^n)). Full jitter spreads a crowd of agents that lost
 * the same replica over the whole window instead of letting them return in waves.
 * Not thread-safe in any meaningful sense; one instance per reconnect loop.
 */
export class Backoff {
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #random: RandomSource;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.#baseMs = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
    this.#capMs = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
    this.#random = options.random ?? Math.random;
  }

  /** Number of failures since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The upper bound of the next delay, without consuming an attempt. */
  ceilingMs(): number {
    // 2^attempt overflows to Infinity long after it passed any sane cap; min() handles that.
    return Math.min(this.#capMs, this.#baseMs * 2 ** this.#attempt);
  }

  /** Returns the delay before the next attempt and counts one more failure. */
  nextDelayMs(): number {
    const delay = fullJitter(this.ceilingMs(), this.#random);
    this.#attempt++;
    return delay;
  }

  /** Called after a connection stayed healthy: the next failure starts from base again. */
  reset(): void {
    this.#attempt = 0;
  }
}

/** A uniformly random whole number of milliseconds in [0, ceilingMs]. */
export function fullJitter(ceilingMs: number, random: RandomSource = Math.random): number {
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceilingMs);
}
