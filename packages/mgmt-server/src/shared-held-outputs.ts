// Held outputs are shared state (issue: a release reaching another replica than
// the agent's must work). Each replica mirrors the outputs it holds into the
// durable state directory every replica of a plane shares; a release arriving
// at another replica leaves a release request there, which the holding replica
// carries out within a second.

import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { HeldOutput, HeldOutputs } from './held-outputs.ts';

/** A held output as any replica sees it: who holds it, for its agent. */
export type SharedHeldOutput = HeldOutput & { readonly replica: string };

interface HeldRecord extends Omit<HeldOutput, 'since'> {
  readonly since: string;
  readonly replica: string;
}

const CHECK_INTERVAL_MS = 1000;
const RELEASE_SUFFIX = '.release';

/**
 * The plane-wide view of held outputs over this replica's HeldOutputs. Records
 * are written atomically (temp file + rename). A record whose replica stopped
 * holding it is removed by that replica; one left by a replica that died is
 * replaced as soon as the agent's new replica holds or delivers its output.
 */
export class SharedHeldOutputs {
  readonly #dir: string;
  readonly #replica: string;
  readonly #held: HeldOutputs;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #writes: Promise<void> = Promise.resolve();

  constructor(dir: string, replica: string, held: HeldOutputs, logger: Logger) {
    this.#dir = dir;
    this.#replica = replica;
    this.#held = held;
    this.#logger = logger;
  }

  /**
   * Mirrors every local hold and clear, and carries out release requests left by
   * other replicas. Records this replica left before a restart are dropped: its
   * memory starts empty, and a still-needed hold is recorded again when its agent
   * reconnects.
   */
  start(): void {
    this.#writes = this.#dropOwnRecords().catch((err: unknown) => this.#logger.warn({ err }, 'could not drop held-output records of an earlier run'));
    this.#unsubscribe = this.#held.onChange((cluster) => {
      this.#writes = this.#writes.then(() => this.#mirror(cluster)).catch((err: unknown) =>
        this.#logger.warn({ err, cluster }, 'could not share a held output with the other replicas'));
    });
    this.#timer = setInterval(() => void this.#serveReleaseRequests().catch((err: unknown) =>
      this.#logger.warn({ err }, 'could not read release requests')), CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    await this.#writes;
  }

  /** Every held output of the plane, this replica's first (they are the freshest), sorted by cluster. */
  async list(): Promise<SharedHeldOutput[]> {
    const byCluster = new Map<string, SharedHeldOutput>();
    for (const record of await this.#records()) {
      // This replica's own records mirror its memory, which is authoritative (the mirror may lag).
      if (record.replica !== this.#replica) byCluster.set(record.cluster, { ...record, since: new Date(record.since) });
    }
    for (const local of this.#held.list()) byCluster.set(local.cluster, { ...local, replica: this.#replica });
    return [...byCluster.values()].sort((a, b) => (a.cluster < b.cluster ? -1 : 1));
  }

  /**
   * Releases the output held for a cluster, wherever it is held: here at once;
   * on another replica through a release request for that exact hash.
   * Returns the released output, or undefined when none is held anywhere.
   */
  async release(cluster: string): Promise<SharedHeldOutput | undefined> {
    const local = this.#held.release(cluster);
    if (local) return { ...local, replica: this.#replica };
    const record = (await this.#records()).find((r) => r.cluster === cluster && r.replica !== this.#replica);
    if (!record) return undefined;
    await this.#writeAtomic(join(this.#dir, `${cluster}${RELEASE_SUFFIX}`), JSON.stringify({ hash: record.hash }));
    this.#logger.info({ cluster, hash: record.hash, holder: record.replica }, 'release requested from the replica holding the output');
    return { ...record, since: new Date(record.since) };
  }

  async #dropOwnRecords(): Promise<void> {
    for (const record of await this.#records()) {
      if (record.replica === this.#replica) await rm(join(this.#dir, `${record.cluster}.json`), { force: true });
    }
  }

  async #mirror(cluster: string): Promise<void> {
    const held = this.#held.get(cluster);
    const path = join(this.#dir, `${cluster}.json`);
    if (!held) {
      await rm(path, { force: true });
      return;
    }
    const record: HeldRecord = { ...held, since: held.since.toISOString(), replica: this.#replica };
    await this.#writeAtomic(path, JSON.stringify(record));
  }

  async #serveReleaseRequests(): Promise<void> {
    for (const name of await this.#names()) {
      if (!name.endsWith(RELEASE_SUFFIX)) continue;
      const cluster = name.slice(0, -RELEASE_SUFFIX.length);
      const held = this.#held.get(cluster);
      if (!held) continue;
      const path = join(this.#dir, name);
      const request = JSON.parse(await readFile(path, 'utf8')) as { hash?: unknown };
      await rm(path, { force: true });
      // A request for another hash was about an output no longer held: a new one is assessed afresh.
      if (request.hash !== held.hash) continue;
      this.#held.release(cluster);
      this.#logger.warn({ cluster, hash: held.hash }, 'released a held output at the request of another replica');
    }
  }

  async #records(): Promise<HeldRecord[]> {
    const out: HeldRecord[] = [];
    for (const name of await this.#names()) {
      if (!name.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(await readFile(join(this.#dir, name), 'utf8')) as HeldRecord);
      } catch (err) {
        // Removed between listing and reading (released meanwhile): not held any more.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return out;
  }

  async #names(): Promise<string[]> {
    try {
      return await readdir(this.#dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async #writeAtomic(path: string, text: string): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, text);
    await rename(tmp, path);
  }
}
