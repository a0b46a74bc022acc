/** Every phase of the tier bench runs under a time limit, so the bench ends and says where it stopped. */
import { MeshrelayError } from '@meshrelay/api';

export interface PhaseRecord {
  readonly name: string;
  readonly status: 'done' | 'failed' | 'timed out' | 'not run';
  readonly seconds: number;
  /** Why it failed or timed out. */
  readonly reason?: string;
}

/** What `working` failed with, if it fails within a moment of being aborted (as "; …"), else "". */
async function settledReason(working: Promise<unknown>): Promise<string> {
  const outcome = await Promise.race([
    working.then(
      () => '',
      (err: unknown) => `; ${err instanceof Error ? err.message : String(err)}`,
    ),
    new Promise<string>((r) => setTimeout(() => r(''), 2000).unref()),
  ]);
  return outcome;
}

export class PhaseTimeoutError extends MeshrelayError {
  constructor(phase: string, limitMs: number) {
    super('MESHRELAY_ERR_UNAVAILABLE', `phase "${phase}" did not finish within ${(limitMs / 1000).toFixed(0)} s`);
  }
}

/**
 * Runs phases in order; each gets an AbortSignal that fires at its time limit, and its promise
 * is raced against the limit. After the first failure or timeout the remaining phases are
 * recorded as not run (the caller decides which later phases may still run, via `always`).
 */
export class PhaseRunner {
  readonly records: PhaseRecord[] = [];
  #stopped: string | undefined;

  readonly limitMs: number;

  constructor(limitMs: number) {
    this.limitMs = limitMs;
  }

  /** The phase running now (the last one started), for samplers that say when something happened. */
  get current(): string | undefined {
    return this.#current;
  }

  #current: string | undefined;

  /** Where the run stopped (phase and reason), or undefined when every phase so far finished. */
  get stoppedAt(): string | undefined {
    return this.#stopped;
  }

  /** Runs `work` unless an earlier phase stopped the run (or `always` is set); returns its result or undefined. */
  async run<T>(
    name: string,
    work: (signal: AbortSignal) => Promise<T>,
    options: { always?: boolean; limitMs?: number } = {},
  ): Promise<T | undefined> {
    if (this.#stopped !== undefined && options.always !== true) {
      this.records.push({ name, status: 'not run', seconds: 0 });
      return undefined;
    }
    const limitMs = options.limitMs ?? this.limitMs;
    const controller = new AbortController();
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new PhaseTimeoutError(name, limitMs));
      }, limitMs);
    });
    this.#current = name;
    console.error(`phase ${name}: started (limit ${(limitMs / 1000).toFixed(0)} s)`);
    const working = work(controller.signal);
    try {
      const result = await Promise.race([working, limit]);
      this.records.push({ name, status: 'done', seconds: (performance.now() - started) / 1000 });
      console.error(`phase ${name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      return result;
    } catch (err) {
      const timedOut = err instanceof PhaseTimeoutError;
      let reason = err instanceof Error ? err.message : String(err);
      // A stopped phase usually says how far it got when it notices the abort: keep that.
      if (timedOut) reason += await settledReason(working);
      this.records.push({
        name,
        status: timedOut ? 'timed out' : 'failed',
        seconds: (performance.now() - started) / 1000,
        reason,
      });
      this.#stopped ??= `${name}: ${reason}`;
      console.error(`phase ${name}: ${timedOut ? 'timed out' : 'failed'}: ${reason}`);
      controller.abort();
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
