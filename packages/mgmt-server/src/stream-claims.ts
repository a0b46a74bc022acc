// DESIGN §4: two agents holding the same cluster identity at once — the newer
// wins, the older is fenced off, also when they are on different replicas.
// Each replica claims (cluster, kind) in the state directory every replica of a
// plane shares when a stream opens; the claim written last names the newest
// stream, and a replica whose stream no longer holds the claim fences it off.

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { GRPC_STATUS } from '@meshrelay/api';
import type { ConnectionTracker, StreamHandle } from './connections.ts';

const CHECK_INTERVAL_MS = 500;

interface Claim {
  readonly owner: string;
  readonly replica: string;
}

/**
 * Plane-wide fencing of duplicate streams. Claims are replaced atomically
 * (temp file + rename), so the file always names exactly one stream: the one
 * whose claim was written last.
 */
export class StreamClaims {
  readonly #dir: string;
  readonly #replica: string;
  readonly #connections: ConnectionTracker;
  readonly #logger: Logger;
  /** This process's streams already claimed, by owner token. */
  readonly #claimed = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #work: Promise<void> = Promise.resolve();

  constructor(dir: string, replica: string, connections: ConnectionTracker, logger: Logger) {
    this.#dir = dir;
    this.#replica = replica;
    this.#connections = connections;
    this.#logger = logger;
  }

  start(): void {
    this.#unsubscribe = this.#connections.onChange(() => this.#queue(() => this.#claimNew()));
    this.#timer = setInterval(() => this.#queue(() => this.#fenceLosers()), CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    await this.#work;
  }

  #queue(task: () => Promise<void>): void {
    this.#work = this.#work.then(task).catch((err: unknown) => this.#logger.warn({ err }, 'stream claims: could not read or write a claim'));
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
      await mkdir(this.#dir, { recursive: true });
      const path = this.#path(stream);
      const tmp = `${path}.${process.pid}.${stream.id}.tmp`;
      await writeFile(tmp, JSON.stringify(claim));
      await rename(tmp, path);
    }
  }

  async #fenceLosers(): Promise<void> {
    for (const stream of this.#connections.streams()) {
      const owner = this.#owner(stream);
      if (!this.#claimed.has(owner)) continue;
      const claim = await this.#read(stream);
      if (!claim || claim.owner === owner) continue;
      this.#logger.warn({ cluster: stream.cluster, kind: stream.kind, peer: stream.peer, newer: claim.replica },
        `a newer ${stream.kind} stream for this cluster on replica ${claim.replica} fenced off this one`);
      stream.terminate(GRPC_STATUS.ABORTED, `MESHRELAY_ERR_FENCED: a newer connection for cluster "${stream.cluster}" took over on replica ${claim.replica}`);
    }
  }

  async #read(stream: StreamHandle): Promise<Claim | undefined> {
    try {
      return JSON.parse(await readFile(this.#path(stream), 'utf8')) as Claim;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  #path(stream: StreamHandle): string {
    return join(this.#dir, `${stream.cluster}.${stream.kind}.json`);
  }
}
