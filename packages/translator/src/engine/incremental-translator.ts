/**
 * An incremental translation engine: keeps what one run built for the next, so a run after a
 * small input change re-translates only what depends on it. Its result is always equal to
 * `translate()` of the same input (outputs byte for byte, problems, statuses, security
 * outputs); see translation-memo.ts for what is reused and how.
 */
import { MeshrelayError } from '@meshrelay/api';
import type { OutputValidator } from '../istio/istio-validator.ts';
import { translationSteps } from './pipeline.ts';
import { RunMemo } from './translation-memo.ts';
import type { TranslationInput, TranslationResult } from './types.ts';

export interface IncrementalTranslatorOptions {
  /** Work longer than this without handing the event loop back is split (default 20 ms). */
  readonly sliceMs?: number;
  /**
   * Monotonic milliseconds, for slicing only (default `performance.now`): it decides where the
   * engine yields to the event loop, never what it computes.
   */
  readonly now?: () => number;
}

const DEFAULT_SLICE_MS = 20;

export class IncrementalTranslator {
  readonly #validator: OutputValidator;
  readonly #sliceMs: number;
  readonly #now: () => number;
  #memo = new RunMemo();
  #running = false;

  constructor(validator: OutputValidator, options: IncrementalTranslatorOptions = {}) {
    this.#validator = validator;
    this.#sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Translates `input`, reusing the previous run's work where its inputs did not change.
   * Cooperative: hands the event loop back (setImmediate) whenever a slice of work has run,
   * between clusters and VirtualDestinations. One run at a time (a second concurrent call is
   * a programming error and throws); a run that throws leaves the engine usable, and the
   * next run recomputes what it cannot trust.
   */
  async run(input: TranslationInput): Promise<TranslationResult> {
    if (this.#running)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        'IncrementalTranslator.run: a run is already in progress (runs must not overlap)',
      );
    this.#running = true;
    try {
      const steps = translationSteps(input, this.#validator, this.#memo);
      let sliceStart = this.#now();
      for (;;) {
        const step = steps.next();
        if (step.done) {
          this.#memo.turn();
          return step.value;
        }
        if (this.#now() - sliceStart >= this.#sliceMs) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          sliceStart = this.#now();
        }
      }
    } catch (err) {
      // What the failed run stored may be half-done work: start over.
      this.#memo = new RunMemo();
      throw err;
    } finally {
      this.#running = false;
    }
  }
}
