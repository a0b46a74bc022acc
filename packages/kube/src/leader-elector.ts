import type { Logger } from 'pino';
import { MeshrelayError } from '@meshrelay/api';

/**
 * One candidate in a leader election over a shared lease. At most one candidate
 * of a lease believes it leads at any moment, provided the candidates' clocks
 * agree within `leaseDuration − renewDeadline`.
 *
 * Thread-safety: Node runs every method and every listener on the one event
 * loop; listeners are called synchronously, one at a time, in registration
 * order, and never re-entered. A listener must not throw and must not block: it
 * starts whatever asynchronous work the change needs and returns.
 */
export interface LeaderElector {
  /** This candidate's identity, as written into the lease's holder field. */
  readonly identity: string;
  /**
   * Starts campaigning in the background: tries to acquire the lease every
   * retryPeriod, and once leading renews it every retryPeriod. Idempotent; may
   * be called again after stop().
   */
  start(): void;
  /**
   * Stops campaigning and, when this candidate holds the lease, releases it (no
   * holder), so a successor takes over on its next attempt instead of waiting
   * for expiry. Reports `false` to listeners first if it was leading. Never
   * rejects: a failed release is logged, and the lease then simply expires.
   */
  stop(): Promise<void>;
  /**
   * True while this candidate leads. Checked against the clock on every call: a
   * leader whose last successful renewal is renewDeadline old is no longer
   * leader, even before its timers noticed, so a process that was frozen and
   * resumes cannot act on a lease that may have passed to someone else.
   */
  isLeader(): boolean;
  /** The holder last seen in the lease (this identity while leading), or undefined if none or not yet read. */
  holder(): string | undefined;
  /**
   * Registers a listener for leadership changes: `true` when this candidate
   * acquires the lease, `false` when it releases, loses or steps down. A leader
   * that fails to renew within renewDeadline steps down (reports `false`)
   * BEFORE the lease can expire for the other candidates. Returns an
   * unsubscribe function.
   */
  onChange(listener: (leader: boolean) => void): () => void;
}

/** Timing shared by every elector; see validateElectionTiming for the rules between them. */
export interface ElectionTiming {
  /** How long a lease stays valid after its last renewal; others take over only after it. */
  readonly leaseDurationMs: number;
  /** A leader that could not renew for this long steps down. Shorter than leaseDurationMs. */
  readonly renewDeadlineMs: number;
  /** Time between attempts to acquire or renew. Shorter than renewDeadlineMs. */
  readonly retryPeriodMs: number;
}

export interface ElectorBaseOptions extends ElectionTiming {
  readonly identity: string;
  readonly logger: Logger;
  /** Wall clock in ms since the epoch (default Date.now); lease times are written and judged with it. */
  readonly clock?: () => number;
}

/**
 * Throws MESHRELAY_ERR_INVALID_CONFIG unless 0 < retryPeriod < renewDeadline <
 * leaseDuration and the identity is non-empty: a leader must get several
 * attempts to renew, and must step down before its lease can expire.
 */
export function validateElectionTiming(options: ElectionTiming & { readonly identity: string }): void {
  const problems: string[] = [];
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
  for (const [name, value] of Object.entries({ leaseDurationMs, renewDeadlineMs, retryPeriodMs })) {
    if (!Number.isFinite(value) || value <= 0)
      problems.push(`${name} must be a positive number of milliseconds (got ${value})`);
  }
  if (renewDeadlineMs >= leaseDurationMs)
    problems.push(`renewDeadlineMs (${renewDeadlineMs}) must be shorter than leaseDurationMs (${leaseDurationMs})`);
  if (retryPeriodMs >= renewDeadlineMs)
    problems.push(`retryPeriodMs (${retryPeriodMs}) must be shorter than renewDeadlineMs (${renewDeadlineMs})`);
  if (options.identity.trim() === '') problems.push('identity must not be empty');
  if (problems.length > 0)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `leader election: ${problems.join('; ')}`);
}
