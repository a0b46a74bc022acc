/**
 * A leader lease as both backends (a Kubernetes Lease, a lease file) store it,
 * in milliseconds since the epoch. An empty `holder` means released: anyone may
 * take it at once.
 */
export interface LeaseRecord {
  readonly holder: string;
  readonly acquireTimeMs: number;
  readonly renewTimeMs: number;
  /** The holder's lease duration; candidates judge expiry by it, not by their own setting. */
  readonly leaseDurationMs: number;
  /** How many times the lease changed hands. */
  readonly transitions: number;
}

/** What a candidate wants written, and why. */
export type LeaseDecision =
  | { readonly action: 'create' | 'renew' | 'takeover'; readonly record: LeaseRecord }
  | { readonly action: 'wait'; readonly expiresAtMs: number };

/**
 * PURE: decides what `identity` does with the lease it just read at `nowMs`.
 * - no lease: create it;
 * - its own lease (even one it stepped down from): renew it;
 * - released (empty holder) or `renewTime + leaseDuration` has passed: take it
 *   over, counting one more transition;
 * - otherwise wait until it expires.
 * Expiry compares the holder's renewTime with the local clock, so it assumes the
 * candidates' clocks agree within `leaseDuration − renewDeadline` (the margin a
 * failing leader keeps by stepping down at its renew deadline).
 */
export function decideLease(
  current: LeaseRecord | undefined,
  identity: string,
  nowMs: number,
  leaseDurationMs: number,
): LeaseDecision {
  const mine = (acquireTimeMs: number, transitions: number): LeaseRecord => ({
    holder: identity,
    acquireTimeMs,
    renewTimeMs: nowMs,
    leaseDurationMs,
    transitions,
  });
  if (current === undefined) return { action: 'create', record: mine(nowMs, 0) };
  if (current.holder === identity) return { action: 'renew', record: mine(current.acquireTimeMs, current.transitions) };
  const expiresAtMs = current.renewTimeMs + current.leaseDurationMs;
  if (current.holder !== '' && nowMs < expiresAtMs) return { action: 'wait', expiresAtMs };
  return { action: 'takeover', record: mine(nowMs, current.transitions + 1) };
}

/** The record a holder writes when it lets go: no holder, so a successor takes over on its next attempt. */
export function releasedLease(current: LeaseRecord, nowMs: number): LeaseRecord {
  return { ...current, holder: '', renewTimeMs: nowMs };
}
