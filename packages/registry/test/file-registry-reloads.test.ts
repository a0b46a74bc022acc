// The file registry re-reads its records on every change it is told of and every 2 s. Each
// reload waits its turn behind the registry's writes. While a write waits (here, for a lock
// another process holds), the reloads it was told to make must not pile up behind it: one
// waiting reload reads every change before it. When they piled up, a loaded server ran them one
// after the other, and a cluster's first input waited tens of seconds for its ClusterWarm write.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createFileClusterRegistry } from '../src/file-cluster-registry.ts';
import { withFileLock } from '../src/file-record-lock.ts';

/** A debug logger whose 'registry reloaded' lines are counted. */
function countingLogger(): { logger: pino.Logger; reloads: () => number } {
  let reloads = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.includes('"registry reloaded"')) reloads++;
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), reloads: () => reloads };
}

test(
  'given a write waiting for a lock held elsewhere, when changes and polls keep asking for reloads, then one reload runs after it, not one per request',
  { timeout: 60_000 },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'meshrelay-registry-reloads-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { logger, reloads } = countingLogger();
    const registry = await createFileClusterRegistry({
      dir,
      tokenTtlSeconds: 3600,
      tokenOverlapSeconds: 60,
      logger,
      lock: { waitMs: 30_000 },
    });
    t.after(() => registry.close());
    await registry.register('west', {});

    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked: (() => void) | undefined;
    const taken = new Promise<void>((resolve) => (locked = resolve));
    // Another process's writer, as far as the registry can tell: it holds the record's lock.
    const holder = withFileLock(join(dir, 'locks', 'west.lock'), { waitMs: 5_000, staleMs: 60_000 }, async () => {
      locked?.();
      await held;
    });
    await taken;
    const warm = registry.setCondition('west', {
      type: 'ClusterWarm',
      status: 'True',
      reason: 'FirstSnapshotReceived',
      message: 'an input snapshot was received',
    });
    // Changes in the records' directory (each asks for a reload) and two polls, all while the write waits.
    for (let i = 0; i < 10; i++) {
      await writeFile(join(dir, 'clusters', `unrelated-${i}.txt`), 'x');
      await sleep(450);
    }
    const before = reloads();
    release?.();
    await holder;
    await warm;
    await sleep(300);

    assert.equal(registry.get('west')?.status?.conditions?.find((c) => c.type === 'ClusterWarm')?.status, 'True');
    const after = reloads() - before;
    assert.ok(after >= 1, 'the registry reloads once the write is done');
    assert.ok(
      after <= 2,
      `${after} reloads ran one after the other once the write was done; one (or one and a poll) reads every change`,
    );
  },
);
