import { Redis } from 'ioredis';
import { endpointClientOptions, usesSentinel, type RedisEndpoint } from './redis-endpoint.ts';
import { parseInputVersion, type InputVersion } from './input-version.ts';
import type { Raw } from './redis-codec.ts';

export interface RedisClientOptions {
  /** Ignored when `endpoint` names sentinels. */
  readonly url: string;
  readonly endpoint?: RedisEndpoint;
  readonly connectionName: string;
  readonly commandTimeoutMs: number;
  readonly maxReconnectDelayMs: number;
}

/**
 * A client that fails fast while Redis is unreachable and keeps reconnecting in the background:
 * no offline queue, no retry of commands that were in flight when the connection dropped, a
 * per-command timeout (a hung Redis must not hang a put), and a capped exponential backoff.
 * The store writes back what Redis missed itself, on 'ready'.
 */
export function createRedisClient(options: RedisClientOptions): Redis {
  const clientOptions = {
    ...endpointClientOptions(options.endpoint),
    connectionName: options.connectionName,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    commandTimeout: options.commandTimeoutMs,
    // No CLIENT SETINFO on connect: Redis before 7.2 answers it with an error, and ioredis leaves a
    // rejected command's timeout armed, so every connection held the process open for one more
    // command timeout after close (a test file's process lived 25 s past its last test).
    disableClientInfo: true,
    retryStrategy: (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 16), options.maxReconnectDelayMs),
  };
  return usesSentinel(options.endpoint) ? new Redis(clientOptions) : new Redis(options.url, clientOptions);
}

/**
 * How a conditional write treats what Redis holds: 'put' (a change this replica accepted)
 * replaces anything but a value of the same epoch with a higher generation; 'fill' (a copy this
 * replica merely holds, written back after an outage) replaces only a missing, unreadable or
 * same-epoch older value, since another epoch in Redis was written later than the copy was last
 * in sync. The compare reads only the small version hash (epoch, generation) every write sets
 * with the value, so a write never decodes a multi-MB value; a value without one (written before
 * it existed) has its header decoded once, and the write then adds it.
 */
export type InputWriteMode = 'put' | 'fill';

/**
 * The result of a conditional input write: `written`; `current` (Redis already holds this version
 * and nothing was done); or `kept` with the value Redis holds instead, because it was newer.
 */
export type InputWriteResult =
  { readonly kind: 'written' } | { readonly kind: 'current' } | { readonly kind: 'kept'; readonly raw: Raw };

/**
 * What the version key says of the value beside it, without reading the value: the `resume`
 * field parsed (parseInputVersion), or undefined when there is no value, no version, or a
 * version whose fields disagree (a writer that did not set `resume` left an older one behind).
 */
const READ_VERSION_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[3]) == 0 then return false end
return redis.call('HMGET', KEYS[2], 'epoch', 'generation', 'resume')
`;

/** `keys`: the input's parts hash, its version hash, and its format-1 value (either layout may hold it). */
export async function readInputVersion(
  client: Redis,
  keys: { parts: string; version: string; value: string },
): Promise<InputVersion | undefined> {
  const reply = await client.eval(READ_VERSION_LUA, 3, keys.parts, keys.version, keys.value);
  if (!Array.isArray(reply)) return undefined;
  const [epoch, generation, resume] = reply as (string | null)[];
  const version = typeof resume === 'string' ? parseInputVersion(resume) : undefined;
  if (!version || version.epoch !== epoch || String(version.generation) !== generation) return undefined;
  return version;
}

/** Deletes keys and publishes `message` in one transaction. */
export async function deleteAndPublish(
  client: Redis,
  keys: readonly string[],
  channel: string,
  message: string,
): Promise<void> {
  checkTransaction(
    await client
      .multi()
      .del(...keys)
      .publish(channel, message)
      .exec(),
  );
}

function checkTransaction(results: [error: Error | null, result: unknown][] | null): void {
  if (results === null) throw new Error('the Redis transaction was aborted');
  for (const [error] of results) if (error) throw error;
}
