// The lock that makes a registry write in the state directory compare-and-set across processes
// (replicas on one host or on a shared volume). POSIX has no conditional rename, so a writer
// first creates `<locks>/<name>.lock` with O_EXCL — of two processes only one succeeds — and
// holds it while it reads the record, applies its change and renames the new record into place.
//
// A holder that died leaves its lock behind. The lock names its holder (pid, host); another
// process takes it over when that pid is gone from this host, or when the lock is older than
// `staleMs` (a holder on another host, or one that hangs: a write holds the lock for milliseconds).
// A take-over renames the stale lock aside and checks it moved the one it judged stale; a fresh
// lock moved by mistake (its holder replaced it in between) is put back with link(), which fails
// rather than overwrite a newer lock. The writer's own check of the record (file-record-store.ts)
// stays the last guard should two holders ever meet.

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { link, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MeshrelayError } from '@meshrelay/api';

export interface FileLockOptions {
  /** How long a writer waits for a busy lock before it fails (MESHRELAY_ERR_UNAVAILABLE). */
  readonly waitMs: number;
  /** Age after which a lock is taken over whoever holds it. */
  readonly staleMs: number;
}

export const DEFAULT_FILE_LOCK: FileLockOptions = { waitMs: 10_000, staleMs: 30_000 };

interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly since: string;
}

/** Runs `work` holding the lock file `path`; the lock is released however `work` ends. */
export async function withFileLock<T>(path: string, options: FileLockOptions, work: () => Promise<T>): Promise<T> {
  const ino = await acquire(path, options);
  try {
    return await work();
  } finally {
    await release(path, ino);
  }
}

async function acquire(path: string, options: FileLockOptions): Promise<number> {
  await mkdir(dirname(path), { recursive: true });
  const deadline = Date.now() + options.waitMs;
  for (let attempt = 0; ; attempt++) {
    const ino = await tryCreate(path);
    if (ino !== undefined) return ino;
    const seen = await inspect(path);
    if (seen && isStale(seen, options.staleMs)) {
      await takeOver(path, seen.ino);
      continue;
    }
    if (Date.now() >= deadline) throw busy(path, seen?.holder, options.waitMs);
    // Short, growing, jittered waits: a write holds the lock for a few milliseconds.
    await sleep(Math.min(100, 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
  }
}

/** Creates the lock naming this process; its inode, or undefined when someone holds it. */
async function tryCreate(path: string): Promise<number | undefined> {
  let file;
  try {
    file = await open(path, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  try {
    const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    await file.writeFile(`${JSON.stringify(holder)}\n`);
    return (await file.stat()).ino;
  } finally {
    await file.close();
  }
}

interface SeenLock {
  readonly ino: number;
  readonly ageMs: number;
  /** Undefined while the holder has not written its name yet (or wrote garbage). */
  readonly holder: Holder | undefined;
}

async function inspect(path: string): Promise<SeenLock | undefined> {
  const s = await stat(path).catch(() => undefined);
  if (!s) return undefined;
  const text = await readFile(path, 'utf8').catch(() => '');
  let holder: Holder | undefined;
  try {
    const parsed = JSON.parse(text) as Partial<Holder>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string') holder = parsed as Holder;
  } catch {
    holder = undefined;
  }
  return { ino: s.ino, ageMs: Date.now() - s.mtimeMs, holder };
}

function isStale(seen: SeenLock, staleMs: number): boolean {
  if (seen.ageMs > staleMs) return true;
  const { holder } = seen;
  return holder !== undefined && holder.host === hostname() && !processAlive(holder.pid);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function takeOver(path: string, staleIno: number): Promise<void> {
  const aside = `${path}.stale-${randomUUID()}`;
  try {
    await rename(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const moved = await stat(aside).catch(() => undefined);
  if (moved && moved.ino !== staleIno) await link(aside, path).catch(() => undefined);
  await rm(aside, { force: true });
}

/** Removes the lock if it is still the one this writer created (a take-over may have replaced it). */
async function release(path: string, ino: number): Promise<void> {
  const s = await stat(path).catch(() => undefined);
  if (s?.ino === ino) await rm(path, { force: true });
}

function busy(path: string, holder: Holder | undefined, waitMs: number): MeshrelayError {
  const who = holder ? `process ${holder.pid} on ${holder.host} since ${holder.since}` : 'another writer';
  return new MeshrelayError(
    'MESHRELAY_ERR_UNAVAILABLE',
    `registry lock ${path} is held by ${who}; gave up after ${waitMs} ms (remove the file if that process is gone)`,
  );
}
