import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { waitFor } from '@meshrelay/testkit';
import { MemoryReclaimer, lastResortCollection, v8FullCollection, type Reclaim } from '../src/runtime.ts';

const MIB = 1024 * 1024;
const logger = pino({ level: 'silent' });

/** A reclaimer over a heap whose size the test sets, counting collections instead of running them. */
function reclaimerOver(heap: { used: number }, options: { idleMs?: number; minGrowthBytes?: number } = {}) {
  const reclaims: Reclaim[] = [];
  let collections = 0;
  const reclaimer = new MemoryReclaimer({
    idleMs: options.idleMs ?? 200,
    sampleMs: 50,
    minGrowthBytes: options.minGrowthBytes ?? 100 * MIB,
    logger,
    heapUsed: () => heap.used,
    collect: () => {
      collections++;
      heap.used = 300 * MIB;
    },
    onReclaim: (r) => reclaims.push(r),
  });
  return { reclaimer, reclaims, collections: () => collections };
}

/** Keeps the event loop busy (`busyMs` of every `everyMs`) until stopped. */
function keepBusy(busyMs: number, everyMs: number): () => void {
  const timer = setInterval(() => {
    const until = performance.now() + busyMs;
    while (performance.now() < until) {
      // spin: the loop is working
    }
  }, everyMs);
  return () => clearInterval(timer);
}

for (const [name, collect] of [
  ["V8's full collection", () => v8FullCollection()],
  ['the last-resort collection (a Node without the inspector)', () => lastResortCollection()()],
] as const) {
  test(
    `given ${name}, when it runs, then an object nothing references any more is gone`,
    { timeout: 30_000 },
    async () => {
      let target: object | undefined = { payload: new Array(1000).fill('x') };
      const ref = new WeakRef(target);
      target = undefined;
      // A WeakRef's target is kept for the rest of the job that created it.
      await sleep(0);
      await collect();
      assert.equal(ref.deref(), undefined);
    },
  );
}

test(
  'given the heap grew past the threshold, when the loop has been idle long enough, then one collection runs and its figures are reported',
  { timeout: 30_000 },
  async (t) => {
    const heap = { used: 200 * MIB };
    const { reclaimer, reclaims, collections } = reclaimerOver(heap);
    t.after(() => reclaimer.stop());
    reclaimer.start();
    heap.used = 900 * MIB;
    await waitFor(() => collections() === 1, { timeoutMs: 5000, message: 'no collection ran' });
    assert.equal(reclaims[0]?.heapUsedBefore, 900 * MIB);
    assert.equal(reclaims[0]?.heapUsedAfter, 300 * MIB);
    assert.ok((reclaims[0]?.durationMs ?? -1) >= 0);
    // Idle on, but no new growth since the collection: nothing more to do.
    await sleep(600);
    assert.equal(collections(), 1);
  },
);

test(
  'given the heap grew by less than the threshold, when idle, then no collection runs; growth that stays (live data) moves the baseline',
  { timeout: 30_000 },
  async (t) => {
    const heap = { used: 200 * MIB };
    const { reclaimer, collections } = reclaimerOver(heap);
    t.after(() => reclaimer.stop());
    reclaimer.start();
    heap.used = 290 * MIB;
    await sleep(600);
    assert.equal(collections(), 0, 'below the threshold');
    heap.used = 350 * MIB;
    await waitFor(() => collections() === 1, {
      timeoutMs: 5000,
      message: 'growth past the threshold was not collected',
    });
    // The collection left 300 MiB live: growth now counts from there, not from the start.
    heap.used = 390 * MIB;
    await sleep(600);
    assert.equal(collections(), 1);
    heap.used = 410 * MIB;
    await waitFor(() => collections() === 2, {
      timeoutMs: 5000,
      message: 'growth from the new baseline was not collected',
    });
  },
);

test(
  'given a busy event loop, when the heap has grown, then nothing is collected until the loop has been idle long enough',
  { timeout: 30_000 },
  async (t) => {
    const heap = { used: 200 * MIB };
    const { reclaimer, collections } = reclaimerOver(heap);
    t.after(() => reclaimer.stop());
    const stopBusy = keepBusy(30, 40);
    t.after(stopBusy);
    reclaimer.start();
    heap.used = 900 * MIB;
    await sleep(1000);
    assert.equal(collections(), 0, 'the loop was busy');
    stopBusy();
    const idleFrom = performance.now();
    await waitFor(() => collections() === 1, { timeoutMs: 5000, message: 'no collection once idle' });
    assert.ok(performance.now() - idleFrom >= 200 - 50, 'it waited for the idle time');
  },
);

test(
  'given an idle loop while the heap keeps growing (work waiting on I/O), then nothing is collected until the growth stops',
  { timeout: 30_000 },
  async (t) => {
    const heap = { used: 200 * MIB };
    const { reclaimer, collections } = reclaimerOver(heap);
    t.after(() => reclaimer.stop());
    // 20 MiB every 50 ms: 400 MiB/s, far above what an idle server allocates.
    const growing = setInterval(() => (heap.used += 20 * MIB), 50);
    t.after(() => clearInterval(growing));
    reclaimer.start();
    await sleep(1000);
    assert.equal(collections(), 0, 'the heap was still growing');
    clearInterval(growing);
    await waitFor(() => collections() === 1, { timeoutMs: 5000, message: 'no collection once the growth stopped' });
  },
);

test(
  'given an idle time of 0, when the heap grows, then the reclaimer never collects',
  { timeout: 30_000 },
  async (t) => {
    const heap = { used: 200 * MIB };
    const { reclaimer, collections } = reclaimerOver(heap, { idleMs: 0 });
    t.after(() => reclaimer.stop());
    reclaimer.start();
    heap.used = 2000 * MIB;
    await sleep(600);
    assert.equal(collections(), 0);
  },
);
