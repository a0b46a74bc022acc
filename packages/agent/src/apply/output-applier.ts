import type { AppliedOutput } from './output-state.ts';

/**
 * Where output snapshots go (the `file` writer or the `kubernetes` applier).
 * Calls are serialized by the implementation; outputs are immutable values.
 */
export interface OutputApplier {
  /** Hash of the output currently held and served ('' if none): what PullHello reports. */
  readonly heldHash: string;
  /** The output last applied in full (never a partially applied one). */
  readonly held: AppliedOutput | undefined;
  /** Loads the persisted last applied output (headless operation after a restart); undefined if none. */
  restore(): Promise<AppliedOutput | undefined>;
  /**
   * Makes `output` the applied one. Resolves false, doing nothing, when that hash
   * is already held; rejects (keeping the previous output held) when the hash
   * does not match or any part of it could not be applied.
   */
  apply(output: AppliedOutput): Promise<boolean>;
  /**
   * Cancels background work (retries) and waits for an apply in progress; idempotent, and apply() works again
   * afterwards.
   */
  stop(): Promise<void>;
}
