/** A source of uniform random numbers in [0, 1); injectable so the spread is testable. */
export type RandomSource = () => number;

export type AdmissionDecision =
  { readonly admitted: true; readonly paid: boolean } | { readonly admitted: false; readonly retryAfterMs: number };

export interface StreamAdmissionOptions {
  /** New agent sessions admitted per second (token bucket refill; the bucket holds one second's worth). */
  readonly ratePerSecond: number;
  /** How long one admission covers further streams of the same cluster (its Push and Pull, a quick retry). */
  readonly sessionGraceMs?: number;
  readonly random?: RandomSource;
}

const DEFAULT_SESSION_GRACE_MS = 5000;

/**
 * Paces reconnect storms. Every cluster whose agent opens a relay session takes
 * one token from a bucket refilled at `ratePerSecond` (burst: one second's
 * worth); its other streams within the grace period ride on that admission, so
 * an agent's Push and Pull count once. A cluster that finds the bucket empty is
 * told when to come back: each refusal reserves the next free slot after the
 * previous refusal's, plus jitter within one slot, so a crowd returns as a
 * paced wave instead of all at once. Memory: one entry per cluster admitted
 * within the grace period (at most rate × grace).
 */
export class StreamAdmission {
  readonly #rate: number;
  readonly #graceMs: number;
  readonly #random: RandomSource;
  #tokens: number;
  #refilledAt: number | undefined;
  /** The next free slot handed out to a refused cluster, ms since the epoch. */
  #nextSlotAt = 0;
  readonly #passes = new Map<string, number>();
  /** Slots already handed to refused clusters: their other stream gets the same one. */
  readonly #slots = new Map<string, number>();

  constructor(options: StreamAdmissionOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
    this.#rate = options.ratePerSecond;
    this.#graceMs = options.sessionGraceMs ?? DEFAULT_SESSION_GRACE_MS;
    this.#random = options.random ?? Math.random;
    this.#tokens = this.#rate;
  }

  /** Admits (or paces) one new stream of `cluster` at `nowMs`. */
  admit(cluster: string, nowMs: number): AdmissionDecision {
    this.#prune(nowMs);
    const pass = this.#passes.get(cluster);
    if (pass !== undefined && nowMs - pass < this.#graceMs) return { admitted: true, paid: false };
    this.#refill(nowMs);
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      this.#passes.set(cluster, nowMs);
      return { admitted: true, paid: true };
    }
    return { admitted: false, retryAfterMs: this.#slotOf(cluster, nowMs) };
  }

  #refill(nowMs: number): void {
    const since = this.#refilledAt === undefined ? 0 : Math.max(0, nowMs - this.#refilledAt);
    this.#tokens = Math.min(this.#rate, this.#tokens + (since * this.#rate) / 1000);
    this.#refilledAt = nowMs;
  }

  /** Milliseconds until the refused cluster's slot (reserved once per cluster), spread by jitter within one slot. */
  #slotOf(cluster: string, nowMs: number): number {
    let at = this.#slots.get(cluster);
    if (at === undefined) {
      const slotMs = 1000 / this.#rate;
      const tokenAt = nowMs + ((1 - this.#tokens) * 1000) / this.#rate;
      const slot = Math.max(tokenAt, this.#nextSlotAt);
      this.#nextSlotAt = slot + slotMs;
      at = slot + Math.min(Math.max(this.#random(), 0), 1) * slotMs;
      this.#slots.set(cluster, at);
    }
    return Math.ceil(at - nowMs);
  }

  #prune(nowMs: number): void {
    for (const [cluster, at] of this.#passes) {
      if (nowMs - at >= this.#graceMs) this.#passes.delete(cluster);
    }
    for (const [cluster, at] of this.#slots) {
      if (at <= nowMs) this.#slots.delete(cluster);
    }
  }
}
