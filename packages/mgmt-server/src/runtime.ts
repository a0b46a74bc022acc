/**
 * The server process's runtime: every setting the server binary gives its own process, in one
 * place. Each is here because of a measurement (docs/design/decisions/README.md, the sections
 * named below); nothing else in the server tunes the process.
 *
 * - The C allocator's mmap threshold, fixed at start by running the binary once more with it
 *   (`prepareServerProcess`, called first by bin/meshrelay-server.js; #allocator-mmap-threshold).
 * - An idle reclaim: one full collection once the server has gone idle after a burst of work
 *   grew its heap (`MemoryReclaimer`, started by the server with --memory-reclaim-idle;
 *   #idle-memory-reclaim).
 * - The compile cache is enabled by the binary itself, before this module loads (#compile-cache).
 */
import { Session } from 'node:inspector/promises';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';

// ---------------------------------------------------------------------------------------------
// The allocator
// ---------------------------------------------------------------------------------------------

/*
 * The C allocator setting the server runs with on Linux (glibc).
 *
 * glibc serves an allocation above its mmap threshold with its own mapping, returned on free,
 * and everything below it from the main heap, which gives memory back only from its top. The
 * threshold starts at 128 KiB but rises to the size of each large block freed (up to 32 MiB).
 * After a cold start (input snapshots received in chunks, written to Redis, outputs encoded) it
 * sits in the megabytes, so every snapshot-sized buffer lands in the main heap. Once they are
 * freed, a few live allocations above them pin the holes, and a large share of the heap stays
 * free but held (see docs/design/decisions/README.md#allocator-mmap-threshold).
 *
 * A fixed threshold stops the rise: buffers from 256 KiB up (every snapshot chunk, Redis value,
 * encoded output) get their own mapping and return it when freed. The setting has to be in the
 * environment when the process starts, so the server's binary starts itself once more with it
 * (`process.execve`: same process id, arguments and descriptors) unless the operator already
 * chose a setting, or turned this off with MESHRELAY_MALLOC_TUNING=off.
 */

/** The mmap threshold the server sets: the relay's snapshot chunk size (256 KiB). */
export const SERVER_MMAP_THRESHOLD_BYTES = 256 * 1024;

const TUNABLE = 'glibc.malloc.mmap_threshold';

/**
 * The environment to start the server again with, or undefined when it runs as it is: not on
 * Linux, turned off, or the operator already set the threshold (either spelling glibc reads).
 */
export function tunedAllocatorEnvironment(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
): NodeJS.ProcessEnv | undefined {
  if (platform !== 'linux') return undefined;
  const setting = env['MESHRELAY_MALLOC_TUNING'];
  if (setting !== undefined && setting !== 'on') {
    if (setting === 'off') return undefined;
    throw new Error(`MESHRELAY_MALLOC_TUNING must be "on" or "off", not ${JSON.stringify(setting)}`);
  }
  if (env['MALLOC_MMAP_THRESHOLD_'] !== undefined) return undefined;
  const tunables = env['GLIBC_TUNABLES'] ?? '';
  if (tunables.split(':').some((entry) => entry.split('=')[0] === TUNABLE)) return undefined;
  const entry = `${TUNABLE}=${SERVER_MMAP_THRESHOLD_BYTES}`;
  return { ...env, GLIBC_TUNABLES: tunables ? `${tunables}:${entry}` : entry };
}

/**
 * Readies this process before the server loads: starts it once more with the tuned allocator
 * when it needs it (see above), and returns when it runs as it is. Throws on an invalid
 * MESHRELAY_MALLOC_TUNING.
 */
export function prepareServerProcess(): void {
  const env = tunedAllocatorEnvironment(process.env, process.platform);
  if (!env || typeof process.execve !== 'function') return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}

// ---------------------------------------------------------------------------------------------
// The idle reclaim
// ---------------------------------------------------------------------------------------------

// A converged server that has gone idle gives back the memory a burst of work left behind.
//
// V8 sizes the heap for the allocation rate it last saw. After a cold start at tier M (50 input
// snapshots adopted, stored and translated, their records kept) the heap holds twice its live
// size in garbage, and with nothing allocating afterwards no collection comes to take it back:
// a real server sat with much of its RSS as garbage (see
// docs/design/decisions/README.md#idle-memory-reclaim). Once the event loop has been
// mostly idle and the heap has not grown for a while, and the heap has grown by a large amount
// since the last reclaim, one full collection returns it. Growth that turns out to be live
// raises the baseline instead, so a larger mesh does not cause a collection on every idle spell.

/** Heap growth since the last reclaim worth a full collection (below it V8's own collections suffice). */
export const RECLAIM_MIN_GROWTH_BYTES = 256 * 1024 * 1024;
/** Event-loop utilisation under which a sample counts as idle. */
export const IDLE_UTILIZATION = 0.1;
/**
 * Heap growth per second under which a sample counts as idle. Work that waits on I/O (the kept
 * contributions a cold start writes, record by record) leaves the loop idle but still allocates:
 * collecting in its middle would leave the rest of its garbage for a heap sized by it.
 */
export const IDLE_GROWTH_PER_SECOND = 8 * 1024 * 1024;

export interface MemoryReclaimOptions {
  /** How long the event loop must have been idle before a reclaim; 0 never reclaims. */
  readonly idleMs: number;
  readonly logger: Logger;
  /** Called after each reclaim with what it did (metrics). */
  readonly onReclaim?: (r: Reclaim) => void;
  readonly minGrowthBytes?: number;
  /** Length of one utilisation sample. */
  readonly sampleMs?: number;
  /** The collection; the default is V8's full collection. */
  readonly collect?: () => Promise<void> | void;
  readonly heapUsed?: () => number;
}

export interface Reclaim {
  readonly heapUsedBefore: number;
  readonly heapUsedAfter: number;
  readonly rssBefore: number;
  readonly rssAfter: number;
  readonly durationMs: number;
}

type GcFunction = (options?: {
  type?: 'major' | 'minor';
  execution?: 'sync' | 'async';
  flavor?: 'regular' | 'last-resort';
}) => void;

let lastResort: (() => void) | undefined;

/**
 * V8's full collection that gives memory back, as the isolate's low-memory notification does:
 * it collects until nothing more is freed, compacts, shrinks the young generation and returns
 * emptied pages (a plain full collection leaves the heap sized for the burst). Node reaches it
 * through an in-process inspector session (no port is opened); a Node built without the
 * inspector gets the "last-resort" collection of --expose-gc instead, which frees as much but
 * compacts less.
 */
export async function v8FullCollection(): Promise<void> {
  let session: Session | undefined;
  try {
    session = new Session();
    session.connect();
  } catch {
    lastResortCollection()();
    return;
  }
  try {
    await session.post('HeapProfiler.collectGarbage');
  } finally {
    session.disconnect();
  }
}

/** The collection for a Node without the inspector (exported for its test). */
export function lastResortCollection(): () => void {
  if (lastResort) return lastResort;
  let gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== 'function') {
    // The flag takes effect for contexts created after it is set: one new context fetches it.
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as GcFunction;
  }
  const exposed = gc;
  return (lastResort = () => exposed({ type: 'major', execution: 'sync', flavor: 'last-resort' }));
}

export class MemoryReclaimer {
  readonly #o: MemoryReclaimOptions;
  readonly #collect: () => Promise<void> | void;
  readonly #heapUsed: () => number;
  readonly #minGrowth: number;
  #timer: NodeJS.Timeout | undefined;
  #collecting = false;
  #last: EventLoopUtilization | undefined;
  #idleSinceMs = 0;
  /** Heap used right after the last reclaim (or at start): growth is counted from here. */
  #baseline = 0;
  /** Heap used at the last sample. */
  #lastUsed = 0;

  constructor(options: MemoryReclaimOptions) {
    this.#o = options;
    this.#collect = options.collect ?? v8FullCollection;
    this.#heapUsed = options.heapUsed ?? (() => getHeapStatistics().used_heap_size);
    this.#minGrowth = options.minGrowthBytes ?? RECLAIM_MIN_GROWTH_BYTES;
  }

  start(): void {
    if (this.#o.idleMs <= 0 || this.#timer) return;
    this.#baseline = this.#heapUsed();
    this.#lastUsed = this.#baseline;
    this.#last = performance.eventLoopUtilization();
    const sampleMs = this.#o.sampleMs ?? 1000;
    this.#timer = setInterval(() => this.#sample(sampleMs), sampleMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #sample(sampleMs: number): void {
    if (this.#collecting) return;
    const now = performance.eventLoopUtilization();
    const used = this.#heapUsed();
    const busy = performance.eventLoopUtilization(now, this.#last).utilization >= IDLE_UTILIZATION;
    const allocating = used - this.#lastUsed > (IDLE_GROWTH_PER_SECOND * sampleMs) / 1000;
    this.#last = now;
    this.#lastUsed = used;
    this.#idleSinceMs = busy || allocating ? 0 : this.#idleSinceMs + sampleMs;
    if (this.#idleSinceMs < this.#o.idleMs) return;
    if (used - this.#baseline < this.#minGrowth) {
      // Collections of V8's own brought the heap back down: follow it, so growth counts from there.
      this.#baseline = Math.min(this.#baseline, used);
      return;
    }
    this.#collecting = true;
    this.#reclaim(used)
      .catch((err: unknown) => this.#o.logger.warn({ err }, 'memory reclaim failed'))
      .finally(() => {
        this.#collecting = false;
      });
  }

  async #reclaim(heapUsedBefore: number): Promise<void> {
    const rssBefore = process.memoryUsage.rss();
    const started = performance.now();
    await this.#collect();
    const durationMs = performance.now() - started;
    const r: Reclaim = {
      heapUsedBefore,
      heapUsedAfter: this.#heapUsed(),
      rssBefore,
      rssAfter: process.memoryUsage.rss(),
      durationMs,
    };
    this.#baseline = r.heapUsedAfter;
    this.#lastUsed = r.heapUsedAfter;
    this.#idleSinceMs = 0;
    // The collection itself is not work that ends the idle spell.
    this.#last = performance.eventLoopUtilization();
    const mib = (n: number) => Math.round(n / 1048576);
    this.#o.logger.info(
      {
        heapUsedMiB: [mib(r.heapUsedBefore), mib(r.heapUsedAfter)],
        rssMiB: [mib(r.rssBefore), mib(r.rssAfter)],
        ms: Math.round(durationMs),
      },
      'idle after a burst of work: memory reclaimed with one full collection',
    );
    this.#o.onReclaim?.(r);
  }
}
