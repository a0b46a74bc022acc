// Held outputs are shared state (issue: a release reaching another replica than
// the agent's must work). Each replica mirrors the outputs it holds into a shared
// document store (the state directory, or ConfigMaps with the kubernetes
// registry); a release arriving at another replica leaves a release request
// there, which the holding replica carries out within a second.

import type { Logger } from 'pino';
import type { SharedDocumentStore } from '@meshrelay/registry';
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
 * The plane-wide view of held outputs over this replica's HeldOutputs: a
 * document `<cluster>` per held output, `<cluster>.release` per release request
 * (cluster names are DNS labels, so the two never collide). A record whose
 * replica stopped holding it is removed by that replica; one left by a replica
 * that died is replaced as soon as the agent's new replica holds or delivers
 * its output.
 */
export class SharedHeldOutputs {
  readonly #documents: SharedDocumentStore;
  readonly #replica: string;
  readonly #held: HeldOutputs;
  readonly #logger: Logger;
  #stopWatch: (() => void) | undefined;
  #unsubscribe: (() => void) | undefined;
  #writes: Promise<void> = Promise.resolve();

  constructor(documents: SharedDocumentStore, replica: string, held: HeldOutputs, logger: Logger) {
    this.#documents = documents;
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
    this.#queue(() => this.#dropOwnRecords(), 'could not drop held-output records of an earlier run');
    this.#unsubscribe = this.#held.onChange((cluster) =>
      this.#queue(() => this.#mirror(cluster), `could not share the held output of ${cluster} with the other replicas`),
    );
    this.#stopWatch = this.#documents.watch(
      (names) => {
        const requests = names.filter((n) => n.endsWith(RELEASE_SUFFIX)).map((n) => n.slice(0, -RELEASE_SUFFIX.length));
        if (requests.length > 0)
          this.#queue(() => this.#serveReleaseRequests(requests), 'could not carry out a release request');
      },
      CHECK_INTERVAL_MS,
      (err) =>
        this.#logger.warn({ err }, `could not list held outputs and release requests in ${this.#documents.location}`),
    );
  }

  async stop(): Promise<void> {
    this.#stopWatch?.();
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
    const record = await this.#record(cluster);
    if (!record || record.replica === this.#replica) return undefined;
    await this.#documents.put(`${cluster}${RELEASE_SUFFIX}`, Buffer.from(JSON.stringify({ hash: record.hash })));
    this.#logger.info(
      { cluster, hash: record.hash, holder: record.replica },
      'release requested from the replica holding the output',
    );
    return { ...record, since: new Date(record.since) };
  }

  #queue(task: () => Promise<void>, failure: string): void {
    this.#writes = this.#writes.then(task).catch((err: unknown) => this.#logger.warn({ err }, failure));
  }

  async #dropOwnRecords(): Promise<void> {
    for (const record of await this.#records()) {
      if (record.replica === this.#replica) await this.#documents.delete(record.cluster);
    }
  }

  async #mirror(cluster: string): Promise<void> {
    const held = this.#held.get(cluster);
    if (!held) {
      await this.#documents.delete(cluster);
      return;
    }
    const record: HeldRecord = { ...held, since: held.since.toISOString(), replica: this.#replica };
    await this.#documents.put(cluster, Buffer.from(JSON.stringify(record)));
  }

  async #serveReleaseRequests(clusters: readonly string[]): Promise<void> {
    for (const cluster of clusters) {
      const held = this.#held.get(cluster);
      if (!held) continue;
      const name = `${cluster}${RELEASE_SUFFIX}`;
      const body = await this.#documents.get(name);
      if (body === undefined) continue;
      const request = JSON.parse(body.toString('utf8')) as { hash?: unknown };
      await this.#documents.delete(name);
      // A request for another hash was about an output no longer held: a new one is assessed afresh.
      if (request.hash !== held.hash) continue;
      this.#held.release(cluster);
      this.#logger.warn({ cluster, hash: held.hash }, 'released a held output at the request of another replica');
    }
  }

  async #records(): Promise<HeldRecord[]> {
    const out: HeldRecord[] = [];
    for (const { name } of await this.#documents.list()) {
      if (name.endsWith(RELEASE_SUFFIX)) continue;
      // Removed between listing and reading (released meanwhile): not held any more.
      const record = await this.#record(name);
      if (record) out.push(record);
    }
    return out;
  }

  async #record(cluster: string): Promise<HeldRecord | undefined> {
    const body = await this.#documents.get(cluster);
    return body === undefined ? undefined : (JSON.parse(body.toString('utf8')) as HeldRecord);
  }
}
