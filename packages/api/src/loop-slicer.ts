import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Longest stretch of work between two turns of the event loop, in milliseconds. */
export const SLICE_BUDGET_MS = 20;

/**
 * The budget is shared by every slicer of the process, per turn of the event loop. Immediates
 * queued in one turn all run back to back before timers get their next turn, so if each of N
 * concurrent slicers (N snapshots arriving during a reconnect storm) spent a budget of its own,
 * one turn would take N budgets and heartbeats would wait that long. Instead, the first slicer
 * that works in a turn starts the turn's clock, and a timer (which runs only once the turn is
 * over) marks the next turn; every slicer yields once the turn's clock is past its budget.
 */
let turnStart = performance.now();
let turnOpen = false;

function enterTurn(): void {
  if (turnOpen) return;
  turnOpen = true;
  turnStart = performance.now();
  setTimeout(() => {
    turnOpen = false;
  }, 0).unref();
}

/**
 * Cuts a long loop into slices that give the event loop a turn once about
 * `budgetMs` have passed in this turn (by any slicer), so heartbeats, acks and HTTP requests keep
 * their timing while large snapshots are decoded, validated or encoded, however many at once. Use
 * as `if (slicer.due()) await slicer.yield();` inside the loop: the check is a clock read, the
 * await happens only when a slice is over.
 */
export class LoopSlicer {
  readonly #budgetMs: number;
  #sliceStart: number;

  constructor(budgetMs = SLICE_BUDGET_MS) {
    this.#budgetMs = budgetMs;
    enterTurn();
    this.#sliceStart = performance.now();
  }

  /** True once this slice, or this turn of the event loop, has used the budget. */
  due(): boolean {
    const now = performance.now();
    return now - this.#sliceStart >= this.#budgetMs || now - turnStart >= this.#budgetMs;
  }

  /** Gives the event loop a turn (timers and I/O run) and starts a new slice. */
  async yield(): Promise<void> {
    await yieldToLoop();
    enterTurn();
    this.#sliceStart = performance.now();
  }

  /** yield() when the slice is over, else nothing. */
  async pause(): Promise<void> {
    if (this.due()) await this.yield();
  }
}
