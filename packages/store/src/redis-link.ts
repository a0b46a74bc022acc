import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { parseChangeMessage } from './input-change.ts';
import { createRedisClient } from './redis-commands.ts';
import type { RedisEndpoint } from './redis-endpoint.ts';
import type { InputChangedEvent } from './snapshot-store.ts';

export interface RedisLinkOptions {
  readonly url: string;
  /** Sentinel, credentials, TLS (see RedisEndpoint). */
  readonly endpoint?: RedisEndpoint;
  readonly replicaId: string;
  /** The channel of "input changed" messages. */
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly maxReconnectDelayMs: number;
  readonly log: Logger;
}

export interface RedisLinkEvents {
  /** The command connection became usable, or stopped being usable. */
  upChanged(up: boolean): void;
  /** Redis may hold changes this replica missed (a connection came back): time to reconcile. */
  resync(): void;
  /** Another replica announced a change. */
  changed(event: InputChangedEvent): void;
}

/** How much longer a command on the bulk connection may take than one on the command connection. */
const BULK_TIMEOUT_FACTOR = 5;

/**
 * The store's three Redis connections: one for commands, one for bulk work (outputs: writes of
 * several MiB each, which the server makes in the background) and one subscribed to the change
 * channel (a subscribed connection cannot run commands). Commands on one connection run in the
 * order they were sent, so a backlog of output writes on the command connection would hold up
 * an input write that an agent's ack waits for (after a cold start, by seconds; see
 * docs/design/decisions/README.md#redis-bulk-connection); on
 * their own connection, Redis interleaves the two. All reconnect on their own; the subscription
 * is renewed on each reconnect, and this replica's own messages are filtered out.
 */
export class RedisLink {
  readonly command: Redis;
  /** Outputs: every read and write of them, so they stay in order among themselves. */
  readonly bulk: Redis;
  readonly #subscriber: Redis;
  readonly #options: RedisLinkOptions;
  readonly #events: RedisLinkEvents;
  #up = false;
  #closed = false;

  constructor(options: RedisLinkOptions, events: RedisLinkEvents) {
    this.#options = options;
    this.#events = events;
    const clientOptions = {
      url: options.url,
      endpoint: options.endpoint,
      commandTimeoutMs: options.commandTimeoutMs,
      maxReconnectDelayMs: options.maxReconnectDelayMs,
    };
    this.command = createRedisClient({ ...clientOptions, connectionName: `meshrelay-store-${options.replicaId}` });
    // A multi-MiB write queued behind others needs longer than a small command; a hung Redis still ends it.
    this.bulk = createRedisClient({
      ...clientOptions,
      commandTimeoutMs: options.commandTimeoutMs * BULK_TIMEOUT_FACTOR,
      connectionName: `meshrelay-store-${options.replicaId}-bulk`,
    });
    this.#subscriber = createRedisClient({
      ...clientOptions,
      connectionName: `meshrelay-store-${options.replicaId}-sub`,
    });
    this.#watch();
  }

  /** Whether the command connection is usable (as last reported to upChanged). */
  get up(): boolean {
    return this.#up;
  }

  /** Whether a command sent now has a chance: not closed and the connection is ready. */
  writable(): boolean {
    return !this.#closed && this.command.status === 'ready';
  }

  /** Whether the bulk connection is ready for a command (see `writable`). */
  bulkWritable(): boolean {
    return !this.#closed && this.bulk.status === 'ready';
  }

  /** Closes every connection and stops reconnecting. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#up = false;
    await Promise.all([closeClient(this.command), closeClient(this.bulk), closeClient(this.#subscriber)]);
  }

  #watch(): void {
    const log = this.#options.log;
    // Up while both the command and the bulk connection are ready; whenever one comes back, what
    // Redis missed meanwhile is written back.
    const ready = (): void => {
      const up = this.command.status === 'ready' && this.bulk.status === 'ready';
      this.#setUp(up);
      if (up) this.#events.resync();
    };
    for (const client of [this.command, this.bulk]) {
      client.on('ready', ready);
      client.on('close', () => this.#setUp(false));
    }
    this.command.on('error', (err: Error) => log.debug({ err }, 'redis connection error'));
    this.bulk.on('error', (err: Error) => log.debug({ err }, 'redis bulk connection error'));
    this.#subscriber.on('ready', () => void this.#subscribe());
    this.#subscriber.on('error', (err: Error) => log.debug({ err }, 'redis subscriber connection error'));
    this.#subscriber.on('message', (channel: string, message: string) => this.#onMessage(channel, message));
  }

  #setUp(up: boolean): void {
    if (this.#up === up || this.#closed) return;
    this.#up = up;
    if (up) this.#options.log.info('redis is up');
    else this.#options.log.warn('redis is down; changes are kept in memory for write-back');
    this.#events.upChanged(up);
  }

  async #subscribe(): Promise<void> {
    try {
      await this.#subscriber.subscribe(this.#options.channel);
    } catch (err) {
      this.#options.log.warn({ err }, 'cannot subscribe to input changes; will retry when the subscriber reconnects');
      return;
    }
    // Messages published while the subscriber was away are lost.
    this.#events.resync();
  }

  #onMessage(channel: string, message: string): void {
    if (channel !== this.#options.channel || this.#closed) return;
    const event = parseChangeMessage(message);
    if (event === undefined) {
      this.#options.log.warn({ channel }, 'ignoring a malformed input change message');
      return;
    }
    if (event.replica !== this.#options.replicaId) this.#events.changed(event);
  }
}

async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
    } catch {
      // Already gone; disconnect below stops reconnecting either way.
    }
  }
  client.disconnect();
}
