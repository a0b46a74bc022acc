/**
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

/** Starts this process again with the tuned environment when it needs one; returns when it runs as it is. */
export function startWithTunedAllocator(): void {
  const env = tunedAllocatorEnvironment(process.env, process.platform);
  if (!env || typeof process.execve !== 'function') return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}
