import type { TestContext } from 'node:test';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createRedisSnapshotStore, type RedisStoreOptions, type SnapshotStore } from '../src/index.ts';
import { capturingLogger } from './fixtures.ts';

/** A redis-server for one test, stopped in t.after. */
export async function redisServerFor(t: TestContext): Promise<RedisServerHandle> {
  const server = await startRedisServer();
  t.after(() => server.stop());
  return server;
}

export interface TestStore {
  readonly store: SnapshotStore;
  readonly logger: Logger;
  /** Every log line the store wrote, parsed. */
  readonly records: Record<string, unknown>[];
}

let prefixes = 0;

/** A key prefix no other test in this process uses, so tests can share one redis-server. */
export function uniquePrefix(): string {
  prefixes++;
  return `test-${process.pid}-${prefixes}`;
}

/** A Redis store with quick timeouts for tests, closed in t.after. Does not wait for Redis. */
export function redisStoreFor(t: TestContext, options: Omit<RedisStoreOptions, 'logger'>): TestStore {
  const { logger, records } = capturingLogger();
  const store = createRedisSnapshotStore({
    commandTimeoutMs: 500,
    maxReconnectDelayMs: 100,
    writeBackRetryMs: 200,
    ...options,
    logger,
  });
  t.after(() => store.close());
  return { store, logger, records };
}

/** As redisStoreFor, resolving once the store reports Redis up. */
export async function readyRedisStoreFor(
  t: TestContext,
  options: Omit<RedisStoreOptions, 'logger'>,
): Promise<TestStore> {
  const made = redisStoreFor(t, options);
  await waitFor(() => made.store.health().redisUp, {
    timeoutMs: 5000,
    message: `store ${options.replicaId} never saw Redis up`,
  });
  return made;
}

/** A plain ioredis client (offline queue on), quit in t.after. */
export function plainClientFor(t: TestContext, url: string): Redis {
  const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
  client.on('error', () => {}); // reconnects are expected while a server restarts
  t.after(() => client.quit().catch(() => client.disconnect()));
  return client;
}

/**
 * The resource fields (`r:...`) of every write script Redis runs from now on on a key containing
 * `keyPart` (e.g. ':input-parts:'), one list per write, watched with MONITOR.
 */
export async function recordPartsWrites(t: TestContext, url: string, keyPart: string): Promise<string[][]> {
  const monitor = await plainClientFor(t, url).monitor();
  t.after(() => monitor.disconnect());
  const writes: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === 'eval' && args.some((a) => a.includes(keyPart)))
      writes.push(args.filter((a) => a.startsWith('r:')));
  });
  return writes;
}
