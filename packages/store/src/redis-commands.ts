import { Redis } from 'ioredis';
import { parseInputVersion, type InputVersion } from './input-version.ts';

export interface RedisClientOptions {
  readonly url: string;
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
  return new Redis(options.url, {
    connectionName: options.connectionName,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    commandTimeout: options.commandTimeoutMs,
    retryStrategy: (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 16), options.maxReconnectDelayMs),
  });
}

export type InputWriteMode = 'put' | 'fill';

/**
 * The result of a conditional input write: `written`; `current` (Redis already holds this version
 * and nothing was done); or `kept` with the value Redis holds instead, because it was newer.
 */
export type InputWriteResult = { readonly kind: 'written' } | { readonly kind: 'current' } | { readonly kind: 'kept'; readonly raw: string };

/**
 * Writes an input value unless Redis holds a newer one, and publishes `message` when it writes.
 * Modes: 'put' (a change this replica accepted) replaces anything but a value of the same epoch
 * with a higher generation; 'fill' (a copy this replica merely holds, written back after an
 * outage) replaces only a missing, unreadable or same-epoch older value, since another epoch in
 * Redis was written later than the copy was last in sync.
 *
 * The compare reads only the small version hash (KEYS[2]: epoch, generation) that every write
 * sets together with the value, so a write never decodes a multi-MB value. A value without a
 * version hash (written before it existed) has its header decoded once; the write then adds it.
 * A version without a value (evicted) counts as nothing held. The version's `resume` field
 * (see InputVersion) is replaced with every value, so a reader can learn the held hash without
 * reading the value.
 * KEYS[1] value key, KEYS[2] version key; ARGV: value, epoch, generation, mode, channel, message, resume.
 */
const WRITE_INPUT_LUA = `
local epoch, generation
if redis.call('EXISTS', KEYS[1]) == 1 then
  local version = redis.call('HMGET', KEYS[2], 'epoch', 'generation')
  if version[1] and version[2] then
    epoch, generation = version[1], tonumber(version[2])
  else
    local ok, held = pcall(cjson.decode, redis.call('GET', KEYS[1]))
    if ok and type(held) == 'table' and type(held.epoch) == 'string' and type(held.generation) == 'number' then
      epoch, generation = held.epoch, held.generation
    end
  end
end
if epoch and generation then
  local incoming = tonumber(ARGV[3])
  if epoch == ARGV[2] then
    if generation > incoming then return redis.call('GET', KEYS[1]) end
    if generation == incoming and ARGV[4] == 'fill' then return 0 end
  elseif ARGV[4] == 'fill' then
    return redis.call('GET', KEYS[1])
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'epoch', ARGV[2], 'generation', ARGV[3], 'resume', ARGV[7])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`;

export interface InputWrite {
  readonly key: string;
  /** The small hash of the value's epoch and generation, written with every value. */
  readonly versionKey: string;
  readonly value: string;
  readonly epoch: string;
  readonly generation: number;
  readonly mode: InputWriteMode;
  readonly channel: string;
  readonly message: string;
  /** The version's `resume` field: formatInputVersion of the value's snapshot. */
  readonly resume: string;
}

export async function writeInput(client: Redis, write: InputWrite): Promise<InputWriteResult> {
  const args = [write.value, write.epoch, String(write.generation), write.mode, write.channel, write.message, write.resume];
  const reply = await client.eval(WRITE_INPUT_LUA, 2, write.key, write.versionKey, ...args);
  if (reply === 1) return { kind: 'written' };
  if (reply === 0) return { kind: 'current' };
  if (typeof reply === 'string') return { kind: 'kept', raw: reply };
  throw new Error(`unexpected reply to the input write script: ${JSON.stringify(reply)}`);
}

/** Replaces an input value and its version unconditionally (used when the value Redis holds is unreadable) and publishes `message`. */
export async function overwriteInput(client: Redis, write: InputWrite): Promise<void> {
  const version = { epoch: write.epoch, generation: String(write.generation), resume: write.resume };
  checkTransaction(await client.multi().set(write.key, write.value).hset(write.versionKey, version).publish(write.channel, write.message).exec());
}

/**
 * What the version key says of the value beside it, without reading the value: the `resume`
 * field parsed (parseInputVersion), or undefined when there is no value, no version, or a
 * version whose fields disagree (a writer that did not set `resume` left an older one behind).
 */
const READ_VERSION_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('HMGET', KEYS[2], 'epoch', 'generation', 'resume')
`;

export async function readInputVersion(client: Redis, key: string, versionKey: string): Promise<InputVersion | undefined> {
  const reply = await client.eval(READ_VERSION_LUA, 2, key, versionKey);
  if (!Array.isArray(reply)) return undefined;
  const [epoch, generation, resume] = reply as (string | null)[];
  const version = typeof resume === 'string' ? parseInputVersion(resume) : undefined;
  if (!version || version.epoch !== epoch || String(version.generation) !== generation) return undefined;
  return version;
}

/** Deletes keys and publishes `message` in one transaction. */
export async function deleteAndPublish(client: Redis, keys: readonly string[], channel: string, message: string): Promise<void> {
  checkTransaction(await client.multi().del(...keys).publish(channel, message).exec());
}

function checkTransaction(results: [error: Error | null, result: unknown][] | null): void {
  if (results === null) throw new Error('the Redis transaction was aborted');
  for (const [error] of results) if (error) throw error;
}
