import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ElectorBaseOptions, LeaderElector } from './leader-elector.ts';
import { createLeaseElector, type LeaseStore, type LeaseUpdate } from './lease-elector.ts';
import type { LeaseRecord } from './lease-record.ts';

export interface FileLeaderElectorOptions extends ElectorBaseOptions {
  /** The lease file; `<path>.lock` beside it is the update lock. Its directory is created if missing. */
  readonly path: string;
}

/**
 * A leader elector for local mode: replicas on one machine (or one shared
 * volume) elect a leader through a JSON lease file. Throws
 * MESHRELAY_ERR_INVALID_CONFIG on bad timing.
 */
export function createFileLeaderElector(options: FileLeaderElectorOptions): LeaderElector {
  const store = new FileLeaseStore({
    path: options.path,
    staleLockMs: options.leaseDurationMs,
    logger: options.logger,
  });
  return createLeaseElector({ ...options, store });
}

interface FileLeaseStoreOptions {
  readonly path: string;
  /** A lock file older than this belongs to a process that died while holding it, and is broken. */
  readonly staleLockMs: number;
  readonly logger: Logger;
}

/** The lease file as stored (times as ISO strings, so an operator can read it). */
interface LeaseFile {
  readonly holder: string;
  readonly acquireTime: string;
  readonly renewTime: string;
  readonly leaseDurationMs: number;
  readonly transitions: number;
}

interface HeldLock {
  readonly ino: number;
}

/**
 * The lease as a JSON file. Every read-decide-write round runs under an
 * exclusive lock file (`open(lock, 'wx')`): a round that finds the lock taken
 * resolves `conflict`, like a 409. The file is replaced by write-to-temp + rename,
 * so a reader sees the old or the new lease, never half of one. A lock left by a
 * process that died inside a round is broken once it is older than staleLockMs;
 * breaking renames the lock away and checks (by inode) that it was the stale one,
 * so two candidates breaking the same stale lock do not both get in.
 */
export class FileLeaseStore implements LeaseStore {
  readonly description: string;
  readonly #opts: FileLeaseStoreOptions;
  readonly #lockPath: string;

  constructor(options: FileLeaseStoreOptions) {
    this.#opts = options;
    this.#lockPath = `${options.path}.lock`;
    this.description = `lease file ${options.path}`;
  }

  async update(decide: (current: LeaseRecord | undefined) => LeaseRecord | undefined): Promise<LeaseUpdate> {
    const lock = await this.#lock();
    if (!lock) return { outcome: 'conflict' };
    try {
      const current = await this.#read();
      const next = decide(current);
      if (!next) return { outcome: 'unchanged', record: current };
      return (await this.#write(next, lock)) ? { outcome: 'written', record: next } : { outcome: 'conflict' };
    } finally {
      await this.#unlock(lock);
    }
  }

  /** Takes the lock; undefined when a live lock is held by someone else. */
  async #lock(): Promise<HeldLock | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      let handle;
      try {
        handle = await open(this.#lockPath, 'wx', 0o600);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') await mkdir(path.dirname(this.#opts.path), { recursive: true });
        else if (code !== 'EEXIST') throw err;
        else if (!(await this.#breakStaleLock())) return undefined;
        continue;
      }
      try {
        await handle.writeFile(`${process.pid} ${new Date().toISOString()}\n`);
        return { ino: (await handle.stat()).ino };
      } catch (err) {
        await rm(this.#lockPath, { force: true });
        throw err;
      } finally {
        await handle.close();
      }
    }
    return undefined;
  }

  /** True when the lock was stale and is gone now (try again); false when it is live. */
  async #breakStaleLock(): Promise<boolean> {
    const info = await stat(this.#lockPath).catch(() => undefined);
    if (!info) return true;
    // File times are real time, whatever clock the elector was given.
    if (Date.now() - info.mtimeMs < this.#opts.staleLockMs) return false;
    const aside = `${this.#lockPath}.stale-${randomBytes(4).toString('hex')}`;
    try {
      await rename(this.#lockPath, aside);
    } catch {
      return true;
    }
    const moved = await stat(aside).catch(() => undefined);
    if (moved && moved.ino !== info.ino) {
      // Between the stat and the rename someone broke it too and took a fresh lock: give it back.
      await link(aside, this.#lockPath).catch(() => undefined);
      await rm(aside, { force: true });
      return false;
    }
    await rm(aside, { force: true });
    this.#opts.logger.warn(
      { lock: this.#lockPath, ageMs: Date.now() - info.mtimeMs },
      'broke a stale lease lock left by a process that died',
    );
    return true;
  }

  async #unlock(lock: HeldLock): Promise<void> {
    const info = await stat(this.#lockPath).catch(() => undefined);
    if (info?.ino === lock.ino) await unlink(this.#lockPath).catch(() => undefined);
  }

  async #read(): Promise<LeaseRecord | undefined> {
    let text: string;
    try {
      text = await readFile(this.#opts.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const record = parseLeaseFile(text);
    if (!record)
      this.#opts.logger.warn({ file: this.#opts.path }, 'the lease file is not a lease; treating it as absent');
    return record;
  }

  /** Writes the lease unless the lock was broken under us in the meantime (then false). */
  async #write(record: LeaseRecord, lock: HeldLock): Promise<boolean> {
    const tmp = `${this.#opts.path}.tmp-${randomBytes(4).toString('hex')}`;
    const handle = await open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(toLeaseFile(record), null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    const info = await stat(this.#lockPath).catch(() => undefined);
    if (info?.ino !== lock.ino) {
      await rm(tmp, { force: true });
      return false;
    }
    await rename(tmp, this.#opts.path);
    return true;
  }
}

function toLeaseFile(record: LeaseRecord): LeaseFile {
  return {
    holder: record.holder,
    acquireTime: new Date(record.acquireTimeMs).toISOString(),
    renewTime: new Date(record.renewTimeMs).toISOString(),
    leaseDurationMs: record.leaseDurationMs,
    transitions: record.transitions,
  };
}

/** The record in a lease file, or undefined when the text is not one. */
export function parseLeaseFile(text: string): LeaseRecord | undefined {
  let parsed: Partial<Record<keyof LeaseFile, unknown>>;
  try {
    parsed = JSON.parse(text) as Partial<Record<keyof LeaseFile, unknown>>;
  } catch {
    return undefined;
  }
  const acquireTimeMs = typeof parsed.acquireTime === 'string' ? Date.parse(parsed.acquireTime) : Number.NaN;
  const renewTimeMs = typeof parsed.renewTime === 'string' ? Date.parse(parsed.renewTime) : Number.NaN;
  const { holder, leaseDurationMs, transitions } = parsed;
  if (typeof holder !== 'string' || typeof leaseDurationMs !== 'number' || typeof transitions !== 'number')
    return undefined;
  if (Number.isNaN(acquireTimeMs) || Number.isNaN(renewTimeMs)) return undefined;
  return { holder, acquireTimeMs, renewTimeMs, leaseDurationMs, transitions };
}
