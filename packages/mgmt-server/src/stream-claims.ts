// DESIGN §4: two agents holding the same cluster identity at once — the newer
// wins, the older is fenced off, also when they are on different replicas.
// Each replica claims (cluster, kind) in a shared document store (the state
// directory, or ConfigMaps with the kubernetes registry) when a stream opens; the
// claim written last names the newest stream, and a replica whose stream no
// longer holds the claim fences it off.

import type { Logger } from 'pino';
import { GRPC_STATUS } from '@meshrelay/api';
import type { SharedDocumentStore } from '@meshrelay/registry';
import type { ConnectionTracker, StreamHandle } from './connections.ts';

const CHECK_INTERVAL_MS = 500;
const KINDS = ['push', 'pull'] as const;

interface Claim {
  readonly owner: string;
  readonly replica: string;
}

/**
 * Plane-wide fencing of duplicate streams. A claim is a document replaced
 * atomically, last write wins, so it always names exactly one stream: the one
 * whose claim was written last. Claims are re-read (fresh, not from the watch)
 * only when the watch reports them changed.
 */
export class StreamClaims {
  readonly #documents: SharedDocumentStore;
  readonly #replica: string;
  readonly #connections: ConnectionTracker;
  readonly #logger: Logger;
  /** This process's streams already claimed, by owner token. */
  readonly #claimed = new Set<string>();
  /** Claim documents the watch reported changed since they were last read. */
  readonly #changed = new Set<string>();
  #stopWatch: (() => void) | undefined;
  #unsubscribe: (() => void) | undefined;
  #work: Promise<void> = Promise.resolve();

  constructor(documents: SharedDocumentStore, replica: string, connections: ConnectionTracker, logger: Logger) {
    this.#documents = documents;
    this.#replica = replica;
    this.#connections = connections;
    this.#logger = logger;
  }

  start(): void {
    this.#unsubscribe = this.#connections.onChange(() => this.#queue(() => this.#claimNew()));
    this.#stopWatch = this.#documents.watch(
      (names) => {
        for (const name of names) this.#changed.add(name);
        this.#queue(() => this.#fenceLosers());
      },
      CHECK_INTERVAL_MS,
      (err) => this.#logger.warn({ err }, `stream claims: could not list the claims in ${this.#documents.location}`),
    );
  }

  async stop(): Promise<void> {
    this.#stopWatch?.();
    this.#unsubscribe?.();
    await this.#work;
  }

  /** Drops the claims of a deregistered cluster (its streams were closed). */
  async forget(cluster: string): Promise<void> {
    for (const kind of KINDS) await this.#documents.delete(`${cluster}.${kind}`);
  }

  #queue(task: () => Promise<void>): void {
    this.#work = this.#work
      .then(task)
      .catch((err: unknown) => this.#logger.warn({ err }, 'stream claims: could not read or write a claim'));
  }

  #owner(stream: StreamHandle): string {
    return `${this.#replica}/${process.pid}/${stream.id}`;
  }

  async #claimNew(): Promise<void> {
    const open = this.#connections.streams();
    const live = new Set(open.map((s) => this.#owner(s)));
    for (const owner of this.#claimed) if (!live.has(owner)) this.#claimed.delete(owner);
    for (const stream of open) {
      const owner = this.#owner(stream);
      if (this.#claimed.has(owner)) continue;
      this.#claimed.add(owner);
      const claim: Claim = { owner, replica: this.#replica };
      await this.#documents.put(this.#name(stream), Buffer.from(JSON.stringify(claim)));
    }
  }

  async #fenceLosers(): Promise<void> {
    const changed = [...this.#changed];
    this.#changed.clear();
    for (const stream of this.#connections.streams()) {
      const owner = this.#owner(stream);
      if (!this.#claimed.has(owner) || !changed.includes(this.#name(stream))) continue;
      const claim = await this.#read(stream);
      if (!claim || claim.owner === owner) continue;
      this.#logger.warn(
        { cluster: stream.cluster, kind: stream.kind, peer: stream.peer, newer: claim.replica },
        `a newer ${stream.kind} stream for this cluster on replica ${claim.replica} fenced off this one`,
      );
      stream.terminate(
        GRPC_STATUS.ABORTED,
        `MESHRELAY_ERR_FENCED: a newer connection for cluster "${stream.cluster}" took over on replica ${claim.replica}`,
      );
    }
  }

  async #read(stream: StreamHandle): Promise<Claim | undefined> {
    const body = await this.#documents.get(this.#name(stream));
    return body === undefined ? undefined : (JSON.parse(body.toString('utf8')) as Claim);
  }

  #name(stream: StreamHandle): string {
    return `${stream.cluster}.${stream.kind}`;
  }
}
