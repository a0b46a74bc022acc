export type {
  HealthListener,
  InputChangedEvent,
  InputChangedListener,
  SnapshotStore,
  StoreHealth,
} from './snapshot-store.ts';
export { createMemorySnapshotStore } from './memory-snapshot-store.ts';
export { createRedisSnapshotStore, type RedisStoreOptions } from './redis-snapshot-store.ts';
export type { RedisEndpoint, RedisTls, SentinelAddress } from './redis-endpoint.ts';
export type { InputVersion } from './input-version.ts';
