// DESIGN §13: the guard protects content. Each cluster's last admitted input is
// kept in the plane's durable shared state (the state directory every replica of
// a local plane shares, or ConfigMaps in the management namespace with the
// kubernetes registry), so an output never loses what a registered cluster
// contributed merely because that cluster's input is absent — also after Redis
// and every replica restarted empty.

import type { Logger } from 'pino';
import { LoopSlicer, buildInputSnapshot, resourceEncoding, type InputSnapshot, type Resource } from '@meshrelay/api';
import type { SharedDocumentStore } from '@meshrelay/registry';

/** A cluster whose absent input is replaced by its last known one. */
export interface CarriedContribution {
  readonly cluster: string;
  /** Hash of the carried input (what stale provenance entries name). */
  readonly inputHash: string;
  readonly generation: number;
  /** When this replica started carrying it. */
  readonly since: Date;
}

/** The durable record of one cluster's last input; `releasedAt` once an operator let it go. */
interface ContributionFile {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  readonly resources: readonly Resource[];
  readonly releasedAt?: string;
}

const CHECK_INTERVAL_MS = 1000;

/** The start of a record as recordBody and #write lay it out: its cluster (as JSON) and its hash. */
const RECORD_HEAD =
  /^\{"cluster":("(?:[^"\\]|\\.)*"),"epoch":"(?:[^"\\]|\\.)*","generation":\d+,"hash":"([0-9a-f]{64})","resources":\[/;

/**
 * Characters of a record gathered into one piece of its body: small enough for V8's young generation (a string over
 * ~128 KiB is allocated among old objects, where a burst of record writes wakes full collections).
 */
const RECORD_PIECE_CHARS = 64 * 1024;

/**
 * The record of `input` as JSON, in pieces: its resources spliced in from their canonical encodings
 * (kept with the snapshot). Equal to JSON.stringify of the record, without a multi-MB stringify,
 * string or buffer (a record is several MiB, and one change of a cluster writes its record; see
 * docs/design/decisions/README.md#carried-contributions-background): pieces are made between turns
 * of the event loop, as the writer takes them.
 */
async function* recordBody(input: InputSnapshot): AsyncGenerator<string> {
  const head = JSON.stringify({
    cluster: input.cluster,
    epoch: input.epoch,
    generation: input.generation,
    hash: input.hash,
  });
  const slicer = new LoopSlicer();
  let piece = `${head.slice(0, -1)},"resources":[`;
  for (const [i, r] of input.resources.entries()) {
    piece += i === 0 ? resourceEncoding(r) : `,${resourceEncoding(r)}`;
    if (piece.length >= RECORD_PIECE_CHARS) {
      yield piece;
      piece = '';
      if (slicer.due()) await slicer.yield();
    }
  }
  yield `${piece}]}`;
}

/** The first entry of a map, in insertion order. */
function first<K, V>(map: ReadonlyMap<K, V>): [K, V] | undefined {
  for (const entry of map) return entry;
  return undefined;
}

/**
 * The last known input of every cluster, one shared document per cluster, and
 * the set this replica is carrying over now. Not thread-safe beyond Node's
 * single loop; document writes are atomic, so replicas never read a torn
 * record. Returned snapshots are frozen and must not be mutated.
 */
export class CarriedContributions {
  readonly #documents: SharedDocumentStore;
  readonly #logger: Logger;
  readonly #remembered = new Map<string, string>();
  readonly #released = new Set<string>();
  #carried = new Map<string, CarriedContribution>();
  readonly #listeners = new Set<() => void>();
  #stopWatch: (() => void) | undefined;
  /**
   * Verified inputs read by `carry`, kept only while watching: a record can be MBs (several API
   * objects with the kubernetes registry) and is re-read only after the watch reports it changed.
   */
  readonly #verified = new Map<string, InputSnapshot>();
  /**
   * How many record changes this replica saw (reported by the watch, or written here): a read
   * that a change overlapped is not kept, as it may hold the record from before the change.
   */
  #changes = 0;
  /** Inputs whose copy is still to be written, the latest of each cluster, in the order they came. */
  readonly #queued = new Map<string, InputSnapshot>();
  /** The input whose copy is being written now. */
  #writing: InputSnapshot | undefined;
  /** The background writer while it runs. */
  #drain: Promise<void> | undefined;

  constructor(documents: SharedDocumentStore, logger: Logger) {
    this.#documents = documents;
    this.#logger = logger;
  }

  /**
   * Keeps a copy of each admitted input whose hash differs from the kept one (this also ends a
   * release). The copies are written in the background, one record at a time, the latest input
   * of each cluster only: a translation does not wait for them (after a cold start that is
   * every cluster's record, seconds of work a change would otherwise queue behind; see
   * docs/design/decisions/README.md#carried-contributions-background). The
   * promise resolves once everything queued so far is written (see `settled`); a failed write
   * is logged, and the cluster's next input is written again.
   */
  remember(inputs: Iterable<InputSnapshot>): Promise<void> {
    for (const input of inputs) {
      if (this.#latest(input.cluster) === input.hash) continue;
      this.#queued.set(input.cluster, input);
      this.#changed(input.cluster);
    }
    this.#drain ??= this.#writeQueued().finally(() => {
      this.#drain = undefined;
    });
    return this.settled();
  }

  /** Resolves once no kept copy is waiting to be written or being written. */
  async settled(): Promise<void> {
    while (this.#drain) await this.#drain;
  }

  async #writeQueued(): Promise<void> {
    for (let next = first(this.#queued); next; next = first(this.#queued)) {
      const [cluster, input] = next;
      this.#queued.delete(cluster);
      this.#writing = input;
      try {
        await this.#keep(input);
      } catch (err) {
        this.#logger.warn(
          { err, cluster, hash: input.hash },
          'could not keep the contribution of a cluster; its next input is kept again',
        );
      } finally {
        this.#writing = undefined;
      }
      // One record per turn of the loop: heartbeats and the next translation come in between.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  async #keep(input: InputSnapshot): Promise<void> {
    if (this.#remembered.get(input.cluster) === input.hash) return;
    // A replica that just started knows nothing yet: it looks at the kept record first, so a
    // restart does not write every cluster's whole input again (see
    // docs/design/decisions/README.md#carried-contributions-background).
    if (!this.#remembered.has(input.cluster) && (await this.#keptUnreleasedHash(input.cluster)) === input.hash) {
      this.#remembered.set(input.cluster, input.hash);
      return;
    }
    this.#changed(input.cluster);
    await this.#documents.put(input.cluster, recordBody(input));
    this.#changed(input.cluster);
    this.#remembered.set(input.cluster, input.hash);
    this.#released.delete(input.cluster);
  }

  /** The hash of the newest copy of the cluster's input: queued, being written, or kept. */
  #latest(cluster: string): string | undefined {
    const writing = this.#writing?.cluster === cluster ? this.#writing.hash : undefined;
    return this.#queued.get(cluster)?.hash ?? writing ?? this.#remembered.get(cluster);
  }

  /** Whether a copy of the cluster's input is waiting to be written or being written. */
  #pending(cluster: string): boolean {
    return this.#queued.has(cluster) || this.#writing?.cluster === cluster;
  }

  /**
   * The last known inputs to carry for `absent` registered clusters: those with a
   * kept, unreleased record whose content still hashes to what was kept. Records
   * which ones are carried now (see `carried()`), starting `since` at `now`.
   */
  async carry(absent: readonly string[], now: Date): Promise<Map<string, InputSnapshot>> {
    // A cluster that left since its input was queued is carried with that input: wait for its record.
    if (absent.some((cluster) => this.#pending(cluster))) await this.settled();
    const out = new Map<string, InputSnapshot>();
    const carried = new Map<string, CarriedContribution>();
    for (const cluster of absent) {
      const input = this.#verified.get(cluster) ?? (await this.#readVerified(cluster));
      if (!input) continue;
      out.set(cluster, input);
      carried.set(cluster, {
        cluster,
        inputHash: input.hash,
        generation: input.generation,
        since: this.#carried.get(cluster)?.since ?? now,
      });
    }
    this.#carried = carried;
    this.#emit();
    return out;
  }

  /** The kept, unreleased input of a cluster whose content still hashes to what was kept. */
  async #readVerified(cluster: string): Promise<InputSnapshot | undefined> {
    const changesBefore = this.#changes;
    const record = await this.#read(cluster);
    if (!record) return undefined;
    if (record.releasedAt !== undefined) {
      this.#released.add(cluster);
      return undefined;
    }
    const input = buildInputSnapshot({
      cluster,
      epoch: record.epoch,
      generation: record.generation,
      resources: record.resources,
    });
    if (input.hash !== record.hash) {
      this.#logger.error(
        { cluster, kept: record.hash, actual: input.hash },
        'kept contribution does not match its hash; not carried over',
      );
      return undefined;
    }
    if (this.#stopWatch && this.#changes === changesBefore) this.#verified.set(cluster, input);
    return input;
  }

  /** Clusters carried over by the last translation on this replica, by name. */
  carried(): readonly CarriedContribution[] {
    return [...this.#carried.values()].sort((a, b) => (a.cluster < b.cluster ? -1 : 1));
  }

  /** True when an operator released the cluster's contribution and it has not returned since. */
  isReleased(cluster: string): boolean {
    return this.#released.has(cluster);
  }

  /**
   * An operator lets a cluster's contribution go: the next outputs are built
   * without it (a removal on positive evidence — the operator's). Returns the
   * released record's hash, or undefined when nothing is kept for the cluster.
   */
  async release(cluster: string, now: Date): Promise<string | undefined> {
    if (this.#pending(cluster)) await this.settled();
    const record = await this.#read(cluster);
    if (!record || record.releasedAt !== undefined) return undefined;
    await this.#write(cluster, { ...record, releasedAt: now.toISOString() });
    this.#remembered.delete(cluster);
    this.#released.add(cluster);
    this.#logger.warn({ cluster, hash: record.hash }, 'operator released the carried contribution of a cluster');
    return record.hash;
  }

  /** Drops the record of a deregistered cluster. */
  async forget(cluster: string): Promise<void> {
    this.#queued.delete(cluster);
    if (this.#writing?.cluster === cluster) await this.settled();
    this.#remembered.delete(cluster);
    this.#released.delete(cluster);
    this.#carried.delete(cluster);
    this.#changed(cluster);
    await this.#documents.delete(cluster);
    this.#changed(cluster);
    this.#emit();
  }

  /**
   * Calls `onExternalChange` when the record of a carried cluster changed in the
   * shared store (another replica released it, or it returned there), so this
   * replica translates again. Looks once a second.
   */
  watch(onExternalChange: () => void): void {
    this.#stopWatch = this.#documents.watch(
      (names) => {
        for (const name of names) this.#changed(name);
        if (names.some((name) => this.#carried.has(name))) onExternalChange();
      },
      CHECK_INTERVAL_MS,
      (err) => this.#logger.warn({ err }, `could not list the kept contributions in ${this.#documents.location}`),
    );
  }

  stop(): void {
    this.#stopWatch?.();
  }

  /** Called whenever the carried set may have changed (metrics, UI). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * The hash of the cluster's kept record when it is not released, read without parsing the
   * record: this module writes the hash at its start, and a release is the record's last member
   * (an unreleased record ends with its resources array). Undefined when there is none or its
   * shape is not one this module writes.
   */
  async #keptUnreleasedHash(cluster: string): Promise<string | undefined> {
    const body = await this.#documents.get(cluster);
    if (body === undefined || body.subarray(-2).toString('utf8') !== ']}') return undefined;
    const head = RECORD_HEAD.exec(body.subarray(0, 1024).toString('utf8'));
    if (!head || JSON.parse(head[1] as string) !== cluster) return undefined;
    return head[2];
  }

  async #read(cluster: string): Promise<ContributionFile | undefined> {
    const body = await this.#documents.get(cluster);
    if (body === undefined) return undefined;
    const record = JSON.parse(body.toString('utf8')) as ContributionFile;
    return record.cluster === cluster ? record : undefined;
  }

  async #write(cluster: string, record: ContributionFile): Promise<void> {
    this.#changed(cluster);
    await this.#documents.put(cluster, Buffer.from(JSON.stringify(record)));
    this.#changed(cluster);
  }

  /** The cluster's record changes (or changed): drop its cached read, and keep no read that overlapped. */
  #changed(cluster: string): void {
    this.#changes++;
    this.#verified.delete(cluster);
  }

  #emit(): void {
    for (const listener of this.#listeners) listener();
  }
}
