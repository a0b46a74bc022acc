// LoopSlicer: many concurrent sliced loops share one budget per turn of the event loop.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { LoopSlicer } from '@meshrelay/api';

/** About `ms` of synchronous work. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/** Steps done since the timer last ticked, and the most seen between two ticks. */
const counter = { sinceTick: 0, most: 0 };

/** A sliced loop of `steps` steps of ~0.5 ms each. */
async function slicedWork(steps: number): Promise<void> {
  const slicer = new LoopSlicer();
  for (let i = 0; i < steps; i++) {
    spin(0.5);
    counter.sinceTick++;
    if (slicer.due()) await slicer.yield();
  }
}

test(
  'given 12 sliced loops running at once, when a timer ticks beside them, then between two ticks they do about one budget of work, not twelve',
  { timeout: 60_000 },
  async () => {
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
      counter.most = Math.max(counter.most, counter.sinceTick);
      counter.sinceTick = 0;
    }, 5);
    try {
      await Promise.all(Array.from({ length: 12 }, () => slicedWork(400)));
    } finally {
      clearInterval(timer);
    }
    // A 20 ms budget is ~40 steps; twelve budgets of their own would be ~480 steps per turn.
    // Counted in steps, not milliseconds, so a busy machine does not change the verdict.
    assert.ok(ticks > 10, `the timer ticked ${ticks} times`);
    assert.ok(counter.most < 150, `up to ${counter.most} steps ran between two ticks of the timer`);
  },
);

test(
  'given one sliced loop, when it runs, then it still gets whole budgets (it is not cut to a step per turn)',
  { timeout: 60_000 },
  async () => {
    let turns = 0;
    const slicer = new LoopSlicer();
    const started = performance.now();
    for (let i = 0; i < 200; i++) {
      spin(0.5);
      if (slicer.due()) {
        turns++;
        await slicer.yield();
      }
    }
    const elapsed = performance.now() - started;
    // ~100 ms of work in ~20 ms slices: a handful of yields, not one per step.
    assert.ok(turns < 40, `${turns} yields for ${elapsed.toFixed(0)} ms of work`);
  },
);
