import { MeshrelayError, type InputSnapshot, type OutputSnapshot } from '@meshrelay/api';
import type { Logger } from 'pino';
import { formatChangeMessage, namesOtherInput, supersedes } from './input-change.ts';
import { Listeners } from './listeners.ts';
import { decodeInput, decodeOutput, storeKeys, type Decoded, type Raw, type StoreKeys } from './redis-codec.ts';
import { versionOfInput, type InputVersion } from './input-version.ts';
import { deleteAndPublish, readInputVersion, type InputWriteMode } from './redis-commands.ts';
import { MutationMarks } from './mutation-marks.ts';
import { InputParts, decodeInputParts } from './redis-input-parts.ts';
import { OutputParts, decodeOutputParts } from './redis-output-parts.ts';
import { RedisLink } from './redis-link.ts';
import { usesSentinel, type RedisEndpoint } from './redis-endpoint.ts';
import type {
  HealthListener,
  InputChangedEvent,
  InputChangedListener,
  SnapshotStore,
  StoreHealth,
} from './snapshot-store.ts';

export interface RedisStoreOptions {
  /** `redis://host:port[/db]`; may be empty when `endpoint` names sentinels. */
  readonly url: string;
  /** Sentinel, credentials, TLS; its values win over the URL's. */
  readonly endpoint?: RedisEndpoint;
  /** This management replica's id: written with each value and on each change message. */
  readonly replicaId: string;
  /** Prefix of every key and channel; default 'meshrelay'. */
  readonly keyPrefix?: string;
  readonly logger: Logger;
  /** A Redis command that takes longer fails (the change is kept for write-back); default 2000. */
  readonly commandTimeoutMs?: number;
  /** Cap of the reconnect backoff; default 2000. */
  readonly maxReconnectDelayMs?: number;
  /** While changes are pending and Redis is up, how often write-back is tried again; default 5000. */
  readonly writeBackRetryMs?: number;
}

/**
 * A store that keeps every snapshot in memory and shares it through Redis. Redis keys:
 * `<prefix>:input-parts:<cluster>` (a hash, see redis-input-parts.ts; with its version hash
 * `<prefix>:input-version:<cluster>`), `<prefix>:output-parts:<cluster>` (a hash, see
 * redis-output-parts.ts); a format-1 value at `<prefix>:input:<cluster>` or
 * `<prefix>:output:<cluster>` is still read. Channel `<prefix>:input-changed`.
 * Connects in the background: the store is usable at once, and health says when Redis is up.
 * Throws MESHRELAY_ERR_INVALID_CONFIG when replicaId is empty, or url is and no sentinels are named.
 */
export function createRedisSnapshotStore(options: RedisStoreOptions): SnapshotStore {
  if (options.url === '' && !usesSentinel(options.endpoint))
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'redis store: url is empty');
  if (options.replicaId === '')
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'redis store: replicaId is empty');
  return new RedisSnapshotStore(options);
}

/** One kind of snapshot (inputs or outputs): its memory copy, what Redis missed, how to reach Redis. */
interface Table<T> {
  readonly kind: 'input' | 'output';
  readonly memory: Map<string, T>;
  /** Clusters whose memory state (a snapshot or its absence) Redis has not seen. */
  readonly dirty: Set<string>;
  key(cluster: string): string;
  /**
   * What Redis holds for each cluster (the store asks for one at a time): a format-1 value, an output's parts, or null.
   */
  fetch(clusters: readonly string[]): Promise<(Raw | null)[]>;
  decode(raw: Raw, cluster: string): Promise<Decoded<T>>;
  /** Writes the snapshot; returns the mutation number of an entry adopted from Redis instead, if any. */
  write(snapshot: T, mode: InputWriteMode): Promise<number | undefined>;
  remove(cluster: string): Promise<void>;
  /** Whether Redis holds exactly `snapshot` already, asked without sending it (a write-back's fill skips it then). */
  holds(snapshot: T): Promise<boolean>;
  /** Whether the connection this table uses can take a command now. */
  writable(): boolean;
}

class RedisSnapshotStore implements SnapshotStore {
  readonly #replica: string;
  readonly #keys: StoreKeys;
  readonly #log: Logger;
  readonly #link: RedisLink;
  readonly #inputs: Table<InputSnapshot>;
  readonly #inputParts: InputParts;
  readonly #outputs: Table<OutputSnapshot>;
  /** Per Redis key, the number of the last memory change; a Redis reply is applied only if none came after. */
  readonly #marks = new MutationMarks();
  readonly #inputListeners: Listeners<InputChangedEvent>;
  readonly #healthListeners: Listeners<StoreHealth>;
  #lastHealth: StoreHealth;
  #closed = false;
  #remoteChanges: Promise<void> = Promise.resolve();
  #writeBackRunning = false;
  #writeBackAgain = false;
  readonly #retryTimer: NodeJS.Timeout;

  constructor(options: RedisStoreOptions) {
    this.#replica = options.replicaId;
    this.#keys = storeKeys(options.keyPrefix ?? 'meshrelay');
    this.#log = options.logger.child({ component: 'snapshot-store', replica: options.replicaId });
    this.#inputListeners = new Listeners(this.#log, 'input change');
    this.#healthListeners = new Listeners(this.#log, 'health');
    this.#inputParts = new InputParts(() => this.#link.command, this.#keys, this.#replica);
    this.#inputs = this.#inputTable();
    this.#outputs = this.#outputTable();
    this.#link = new RedisLink(
      {
        url: options.url,
        ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
        replicaId: options.replicaId,
        channel: this.#keys.inputChannel,
        commandTimeoutMs: options.commandTimeoutMs ?? 2000,
        maxReconnectDelayMs: options.maxReconnectDelayMs ?? 2000,
        log: this.#log,
      },
      {
        upChanged: () => this.#emitHealth(),
        resync: () => this.#scheduleWriteBack(),
        changed: (event) => this.#onRemoteChange(event),
      },
    );
    this.#lastHealth = this.health();
    this.#retryTimer = setInterval(() => {
      if (this.#link.up && this.health().pendingWriteBack > 0) this.#scheduleWriteBack();
    }, options.writeBackRetryMs ?? 5000).unref();
  }

  async putInput(snapshot: InputSnapshot): Promise<void> {
    this.#inputs.memory.set(snapshot.cluster, snapshot);
    this.#mutate(this.#inputs.key(snapshot.cluster));
    await this.#sync(this.#inputs, snapshot.cluster, 'put');
  }

  async getInput(cluster: string): Promise<InputSnapshot | undefined> {
    return (await this.#readThrough(this.#inputs, [cluster])).get(cluster);
  }

  async inputVersion(cluster: string): Promise<InputVersion | undefined> {
    const held = this.#inputs.memory.get(cluster);
    if (held !== undefined) return versionOfInput(held);
    if (this.#inputs.dirty.has(cluster) || !this.#writable()) return undefined;
    try {
      return await readInputVersion(this.#link.command, {
        parts: this.#keys.inputParts(cluster),
        version: this.#keys.inputVersion(cluster),
        value: this.#keys.input(cluster),
      });
    } catch (err) {
      this.#log.warn(
        { err, cluster },
        'redis version read failed; answering that no input is known (an agent resuming now sends its snapshot again)',
      );
      return undefined;
    }
  }

  memoryInputs(): ReadonlyMap<string, InputSnapshot> {
    return new Map(this.#inputs.memory);
  }

  loadInputs(clusters: readonly string[]): Promise<ReadonlyMap<string, InputSnapshot>> {
    return this.#readThrough(this.#inputs, clusters);
  }

  async deleteInput(cluster: string): Promise<void> {
    this.#inputs.memory.delete(cluster);
    this.#mutate(this.#inputs.key(cluster));
    await this.#sync(this.#inputs, cluster, 'put');
  }

  async putOutput(snapshot: OutputSnapshot): Promise<boolean> {
    this.#outputs.memory.set(snapshot.cluster, snapshot);
    this.#mutate(this.#outputs.key(snapshot.cluster));
    return this.#sync(this.#outputs, snapshot.cluster, 'put');
  }

  async getOutput(cluster: string): Promise<OutputSnapshot | undefined> {
    return (await this.#readThrough(this.#outputs, [cluster])).get(cluster);
  }

  async deleteOutput(cluster: string): Promise<void> {
    this.#outputs.memory.delete(cluster);
    this.#mutate(this.#outputs.key(cluster));
    await this.#sync(this.#outputs, cluster, 'put');
  }

  onInputChanged(listener: InputChangedListener): () => void {
    return this.#inputListeners.add(listener);
  }

  health(): StoreHealth {
    return {
      backend: 'redis',
      redisUp: this.#link.up,
      pendingWriteBack: this.#inputs.dirty.size + this.#outputs.dirty.size,
    };
  }

  bookkeepingSize(): number {
    return this.#marks.size() + this.#inputs.dirty.size + this.#outputs.dirty.size;
  }

  onHealthChange(listener: HealthListener): () => void {
    return this.#healthListeners.add(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#retryTimer);
    this.#inputListeners.clear();
    this.#healthListeners.clear();
    await this.#link.close();
  }

  #inputTable(): Table<InputSnapshot> {
    const parts = this.#inputParts;
    return {
      kind: 'input',
      memory: new Map(),
      dirty: new Set(),
      key: (cluster) => this.#keys.inputParts(cluster),
      fetch: async (clusters) => {
        const raws: (Raw | null)[] = [];
        for (const cluster of clusters) raws.push(await parts.fetch(cluster));
        return raws;
      },
      decode: (raw, cluster) => (typeof raw === 'string' ? decodeInput(raw, cluster) : decodeInputParts(raw, cluster)),
      write: (snapshot, mode) => this.#writeInput(snapshot, mode),
      holds: async (snapshot) => {
        const { cluster } = snapshot;
        const stored = await readInputVersion(this.#link.command, {
          parts: this.#keys.inputParts(cluster),
          version: this.#keys.inputVersion(cluster),
          value: this.#keys.input(cluster),
        });
        return (
          stored !== undefined &&
          stored.hash === snapshot.hash &&
          stored.epoch === snapshot.epoch &&
          stored.generation === snapshot.generation
        );
      },
      remove: (cluster) => {
        parts.forget(cluster);
        return deleteAndPublish(
          this.#link.command,
          [this.#keys.inputParts(cluster), this.#keys.input(cluster), this.#keys.inputVersion(cluster)],
          this.#keys.inputChannel,
          formatChangeMessage(cluster, '', this.#replica, true),
        );
      },
      writable: () => this.#writable(),
    };
  }

  #outputTable(): Table<OutputSnapshot> {
    const parts = new OutputParts(() => this.#link.bulk, this.#keys, this.#replica);
    return {
      kind: 'output',
      memory: new Map(),
      dirty: new Set(),
      key: (cluster) => this.#keys.outputParts(cluster),
      fetch: (clusters) => parts.fetch(clusters),
      decode: (raw, cluster) =>
        typeof raw === 'string' ? decodeOutput(raw, cluster) : decodeOutputParts(raw, cluster),
      write: async (snapshot, mode) => {
        await parts.write(snapshot, mode);
        return undefined;
      },
      remove: (cluster) => parts.remove(cluster),
      holds: (snapshot) => parts.holds(snapshot),
      writable: () => !this.#closed && this.#link.bulkWritable(),
    };
  }

  /**
   * Brings Redis in line with memory for one cluster: writes the snapshot or deletes the key.
   * Resolves false when Redis could not be reached; in 'put' mode the cluster is then kept for
   * write-back. Never rejects.
   */
  async #sync<T>(table: Table<T>, cluster: string, mode: InputWriteMode): Promise<boolean> {
    const key = table.key(cluster);
    const mutation = this.#marks.begin(key);
    try {
      return await this.#syncFrom(table, cluster, mode, mutation);
    } finally {
      this.#marks.end(key, this.#idle(table, cluster));
    }
  }

  async #syncFrom<T>(table: Table<T>, cluster: string, mode: InputWriteMode, mutation: number): Promise<boolean> {
    const snapshot = table.memory.get(cluster);
    if (snapshot === undefined && !table.dirty.has(cluster) && mode === 'fill') return true;
    if (!table.writable()) return this.#failed(table, cluster, mode);
    let synced = mutation;
    try {
      if (snapshot === undefined) await table.remove(cluster);
      else synced = (await table.write(snapshot, mode)) ?? mutation;
    } catch (err) {
      this.#log.warn({ err, cluster, kind: table.kind }, 'redis write failed; keeping the change for write-back');
      return this.#failed(table, cluster, mode);
    }
    if (this.#marks.current(table.key(cluster)) === synced) table.dirty.delete(cluster);
    this.#emitHealth();
    return true;
  }

  #failed<T>(table: Table<T>, cluster: string, mode: InputWriteMode): false {
    if (mode === 'put') {
      table.dirty.add(cluster);
      this.#emitHealth();
    }
    return false;
  }

  /** Writes an input unless Redis holds a newer one, which memory then adopts (see writeInput). */
  async #writeInput(snapshot: InputSnapshot, mode: InputWriteMode): Promise<number | undefined> {
    const { cluster } = snapshot;
    const result = await this.#inputParts.write(snapshot, mode);
    if (result.kind !== 'kept') return undefined;
    const remote = await this.#tryDecode(this.#inputs, result.raw, cluster);
    if (remote === undefined) {
      // What Redis holds cannot be read: replaced, whatever its version says.
      await this.#inputParts.write(snapshot, 'force');
      return undefined;
    }
    if (this.#inputs.memory.get(cluster) !== snapshot || !supersedes(remote.snapshot, snapshot)) return undefined;
    const adopted = this.#adoptInput(remote.snapshot);
    this.#log.info(
      { cluster, generation: remote.snapshot.generation, hash: remote.snapshot.hash, from: remote.replica },
      'redis holds a newer input; memory takes it',
    );
    this.#inputListeners.emit({ cluster, hash: remote.snapshot.hash, replica: remote.replica, deleted: false });
    return adopted;
  }

  #adoptInput(snapshot: InputSnapshot): number {
    this.#inputs.memory.set(snapshot.cluster, snapshot);
    this.#inputs.dirty.delete(snapshot.cluster);
    this.#emitHealth();
    return this.#mutate(this.#inputs.key(snapshot.cluster));
  }

  /**
   * Memory first; then Redis for the rest, one key at a time: at scale a value is several MiB,
   * and one MGET of every cluster's input is a reply of hundreds of MiB that outlasts the command
   * timeout and is turned into strings in one go. Clusters with a pending delete are not read.
   */
  async #readThrough<T>(table: Table<T>, clusters: readonly string[]): Promise<Map<string, T>> {
    const found = new Map<string, T>();
    const missing: string[] = [];
    for (const cluster of clusters) {
      const held = table.memory.get(cluster);
      if (held !== undefined) found.set(cluster, held);
      else if (!table.dirty.has(cluster)) missing.push(cluster);
    }
    for (const cluster of missing) {
      if (!table.writable()) break;
      // Put while the clusters before it were read: memory's copy is the one (reading Redis would
      // give an equal copy that replaces it, and every holder of the put one would keep a second).
      const put = table.memory.get(cluster);
      if (put !== undefined) {
        found.set(cluster, put);
        continue;
      }
      if (table.dirty.has(cluster)) continue;
      const key = table.key(cluster);
      const mark = this.#marks.begin(key);
      try {
        let raw: Raw | null;
        try {
          [raw = null] = await table.fetch([cluster]);
        } catch (err) {
          this.#log.debug({ err, cluster, kind: table.kind }, 'redis read failed; answering from memory');
          break;
        }
        // Decoding gives the event loop turns: a change made meanwhile is newer than what was read.
        const decoded = raw === null ? undefined : await this.#tryDecode(table, raw, cluster);
        if (this.#marks.current(key) !== mark) {
          const held = table.memory.get(cluster); // changed locally meanwhile: memory is newer
          if (held !== undefined) found.set(cluster, held);
          continue;
        }
        if (decoded === undefined) continue;
        table.memory.set(cluster, decoded.snapshot);
        found.set(cluster, decoded.snapshot);
      } finally {
        this.#marks.end(key, this.#idle(table, cluster));
      }
    }
    return found;
  }

  async #tryDecode<T>(table: Table<T>, raw: Raw, cluster: string): Promise<Decoded<T> | undefined> {
    try {
      return await table.decode(raw, cluster);
    } catch (err) {
      this.#log.warn(
        { err, cluster, kind: table.kind, key: table.key(cluster) },
        'ignoring an unreadable snapshot in redis',
      );
      return undefined;
    }
  }

  #onRemoteChange(event: InputChangedEvent): void {
    // One at a time, in arrival order, so an older message cannot overtake a newer one.
    this.#remoteChanges = this.#remoteChanges
      .then(() => this.#applyRemoteChange(event))
      .catch((err: unknown) => this.#log.error({ err, cluster: event.cluster }, 'applying an input change failed'));
  }

  async #applyRemoteChange(event: InputChangedEvent): Promise<void> {
    if (this.#closed) return;
    const { cluster } = event;
    if (event.deleted) {
      this.#inputs.memory.delete(cluster);
      this.#inputs.dirty.delete(cluster);
      this.#mutate(this.#inputs.key(cluster));
      this.#marks.prune(this.#inputs.key(cluster), this.#idle(this.#inputs, cluster));
      this.#emitHealth();
    } else if (namesOtherInput(event, this.#inputs.memory.get(cluster))) {
      await this.#refreshInput(cluster);
    }
    this.#inputListeners.emit(event);
  }

  /** Reads a cluster's input from Redis and adopts it unless memory holds a newer one of the same epoch. */
  async #refreshInput(cluster: string): Promise<void> {
    const key = this.#inputs.key(cluster);
    const mark = this.#marks.begin(key);
    let remote: Decoded<InputSnapshot> | undefined;
    try {
      let raw: Raw | null;
      try {
        raw = await this.#inputParts.fetch(cluster);
      } catch (err) {
        this.#log.warn({ err, cluster }, 'cannot read a changed input from redis; keeping the memory copy');
        return;
      }
      if (raw === null) return;
      remote = await this.#tryDecode(this.#inputs, raw, cluster);
      // A local change while it was read or decoded is newer.
      if (this.#marks.current(key) !== mark) return;
    } finally {
      this.#marks.end(key, this.#idle(this.#inputs, cluster));
    }
    if (remote === undefined) return;
    const held = this.#inputs.memory.get(cluster);
    if (held !== undefined && !supersedes(remote.snapshot, held)) return;
    this.#adoptInput(remote.snapshot);
  }

  #scheduleWriteBack(): void {
    if (this.#closed) return;
    if (this.#writeBackRunning) {
      this.#writeBackAgain = true;
      return;
    }
    this.#writeBackRunning = true;
    void this.#runWriteBack()
      .catch((err: unknown) => this.#log.error({ err }, 'write-back failed'))
      .finally(() => {
        this.#writeBackRunning = false;
      });
  }

  async #runWriteBack(): Promise<void> {
    do {
      this.#writeBackAgain = false;
      const pending = this.health().pendingWriteBack;
      const complete = (await this.#writeBackTable(this.#inputs)) && (await this.#writeBackTable(this.#outputs));
      const left = this.health().pendingWriteBack;
      if (pending > 0 || left > 0) this.#log.info({ pending, left, complete }, 'wrote memory back to redis');
    } while (this.#writeBackAgain && this.#writable());
  }

  /**
   * Pending changes are written as puts; every other memory entry is filled in where Redis lacks
   * it (Redis may have restarted empty) or holds an older one. Stops at the first failure.
   */
  async #writeBackTable<T>(table: Table<T>): Promise<boolean> {
    const clusters = new Set([...table.dirty, ...table.memory.keys()]);
    for (const cluster of clusters) {
      if (this.#closed) return false;
      const mode = table.dirty.has(cluster) ? 'put' : 'fill';
      if (mode === 'fill' && (await this.#holds(table, cluster))) continue;
      if (!(await this.#sync(table, cluster, mode))) return false;
    }
    return true;
  }

  /**
   * Whether Redis already holds exactly what memory holds for the cluster: a fill then sends
   * nothing (a write-back would otherwise send every input and output again after one write that
   * merely timed out; see docs/design/decisions/README.md#redis-fill-check). A failed check answers
   * no: the fill then decides.
   */
  async #holds<T>(table: Table<T>, cluster: string): Promise<boolean> {
    const snapshot = table.memory.get(cluster);
    if (snapshot === undefined || !table.writable()) return false;
    try {
      return await table.holds(snapshot);
    } catch (err) {
      this.#log.debug({ err, cluster, kind: table.kind }, 'redis check before a fill failed; filling');
      return false;
    }
  }

  #writable(): boolean {
    return !this.#closed && this.#link.writable();
  }

  #mutate(key: string): number {
    return this.#marks.bump(key);
  }

  /** Whether the store keeps nothing for the cluster in this table (no snapshot, nothing for write-back). */
  #idle<T>(table: Table<T>, cluster: string): boolean {
    return !table.memory.has(cluster) && !table.dirty.has(cluster);
  }

  #emitHealth(): void {
    const health = this.health();
    const last = this.#lastHealth;
    if (health.redisUp === last.redisUp && health.pendingWriteBack === last.pendingWriteBack) return;
    this.#lastHealth = health;
    this.#healthListeners.emit(health);
  }
}
