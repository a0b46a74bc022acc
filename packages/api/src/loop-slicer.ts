import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Longest stretch of work between two turns of the event loop, in milliseconds. */
export const SLICE_BUDGET_MS = 20;

/**
 * Cuts a long loop into slices that give the event loop a turn once about
 * `budgetMs` have passed, so heartbeats, acks and HTTP requests keep their
 * timing while a large snapshot is decoded, validated or encoded. Use as
 * `if (slicer.due()) await slicer.yield();` inside the loop: the check is a
 * clock read, the await happens only when a slice is over.
 */
export class LoopSlicer {
  readonly #budgetMs: number;
  #sliceStart = performance.now();

  constructor(budgetMs = SLICE_BUDGET_MS) {
    this.#budgetMs = budgetMs;
  }

  /** True once the current slice has used its budget. */
  due(): boolean {
    return performance.now() - this.#sliceStart >= this.#budgetMs;
  }

  /** Gives the event loop a turn (timers and I/O run) and starts a new slice. */
  async yield(): Promise<void> {
    await yieldToLoop();
    this.#sliceStart = performance.now();
  }

  /** yield() when the slice is over, else nothing. */
  async pause(): Promise<void> {
    if (this.due()) await this.yield();
  }
}
