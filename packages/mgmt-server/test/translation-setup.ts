/** A TranslationLoop wired to real parts (redis-server, file registry, Redis store), for loop tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import {
  DirectoryDocumentStore,
  VipAllocations,
  createFileClusterRegistry,
  type SharedDocumentStore,
} from '@meshrelay/registry';
import { createRedisSnapshotStore } from '@meshrelay/store';
import { startRedisServer, waitFor } from '@meshrelay/testkit';
import { DEFAULT_VIP_CIDR, InputJudgements, createIstioValidator } from '@meshrelay/translator';
import { CarriedContributions } from '../src/carried-contributions.ts';
import { ConnectionTracker } from '../src/connections.ts';
import { RelayMetrics } from '../src/metrics.ts';
import { OutputHub } from '../src/output-hub.ts';
import { OutputPersister } from '../src/output-persister.ts';
import { TranslationLoop, type InterestScope } from '../src/translation-loop.ts';

/** Starts everything a TranslationLoop needs (closed in t.after); the gate is open from the start. */
export async function translationSetup(
  t: TestContext,
  options: {
    keyPrefix: string;
    commandTimeoutMs: number;
    debounceMs?: number;
    contributionDocuments?: (dir: string) => SharedDocumentStore;
    /** Interest scoping (--interest-scoped-outputs); absent, outputs are unscoped. */
    scope?: InterestScope;
  },
) {
  // Closed last-started first: the loop before the store it writes to, the store before its Redis.
  // (t.after runs its hooks in the order they were added; in that order the loop's last writes met a
  // stopped Redis and their command timeouts held the file's process open for 25 s.)
  const cleanups: (() => unknown)[] = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const redis = await startRedisServer();
  cleanups.push(() => redis.stop());
  const dir = mkdtempSync(join(tmpdir(), `meshrelay-${options.keyPrefix}-`));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const logger = pino({ level: 'silent' });
  const registry = await createFileClusterRegistry({
    dir: join(dir, 'registry'),
    tokenTtlSeconds: 3600,
    tokenOverlapSeconds: 60,
    logger,
  });
  cleanups.push(() => registry.close());
  const store = createRedisSnapshotStore({
    url: redis.url,
    replicaId: 'r1',
    keyPrefix: options.keyPrefix,
    logger,
    commandTimeoutMs: options.commandTimeoutMs,
    maxReconnectDelayMs: 100,
    writeBackRetryMs: 100,
  });
  cleanups.push(() => store.close());
  await waitFor(() => store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  const outputs = new OutputHub();
  const metrics = new RelayMetrics('r1', new ConnectionTracker());
  const persister = new OutputPersister({
    store,
    logger,
    onFailure: (cluster) => metrics.outputWriteFailures.inc({ cluster }),
  });
  const documents =
    options.contributionDocuments?.(join(dir, 'contributions')) ??
    new DirectoryDocumentStore(join(dir, 'contributions'));
  const contributions = new CarriedContributions(documents, logger);
  cleanups.push(() => contributions.stop());
  const loop = new TranslationLoop({
    registry,
    store,
    outputs,
    persister,
    metrics,
    logger,
    contributions,
    vips: new VipAllocations(join(dir, 'vips.json'), DEFAULT_VIP_CIDR),
    validator: createIstioValidator(),
    gate: { safeMode: false, safeStartWindowSeconds: 0 },
    debounceMs: options.debounceMs ?? 10,
    uptimeMs: () => 60_000,
    ...(options.scope !== undefined ? { scope: options.scope } : {}),
    judgements: new InputJudgements(),
  });
  cleanups.push(() => loop.stop());
  return { redis, registry, store, outputs, metrics, persister, loop, contributions };
}
