// Issue 11.2 at full size: a real meshrelay-server process, restarted over Redis holding every
// input of tier M (50 clusters × 1,000 services × 10 endpoints, ~600 k resources), loads and
// translates them all cold while a relay stream's heartbeats and /healthz are watched.
// Asserts that neither pauses for long (responsiveness), never how long the translation took.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildInputSnapshot } from '@meshrelay/api';
import { createFileClusterRegistry } from '@meshrelay/registry';
import { createRedisSnapshotStore } from '@meshrelay/store';
import { startHealthProbe, startHeartbeatProbe, startRedisServer, waitFor } from '@meshrelay/testkit';
import { pino } from 'pino';
import {
  freeServerPorts,
  metricEndingWith,
  registerClusters,
  scrapeMetrics,
  serverArgs,
  startServerProcess,
  stopChild,
  waitHealthy,
  type ServerProcess,
} from '../tier/processes.ts';
import { TIER_M, clusterName, generateClusterInput } from '../workload.ts';

const ADMIN_TOKEN = 'tier-m-heartbeat-admin-token-0123456789';
/** Heartbeats every 100 ms: a pause of the server's event loop shows as a gap between two. */
const HEARTBEAT_INTERVAL = '100ms';
const MAX_GAP_MS = 1000;
/**
 * The first translation after the restart waits this long, so the probes are in place before it
 * starts (they are ~1 s after /healthz answers; the test fails, saying so, if a translation came first).
 */
const DEBOUNCE = '5s';

test(
  'given every tier M input in Redis, when a restarted server loads and translates them all cold, then relay heartbeats and /healthz never pause for a second',
  { timeout: 900_000 },
  async (t) => {
    const redis = await startRedisServer();
    t.after(() => redis.stop());
    const stateDir = await mkdtemp(join(tmpdir(), 'tier-m-heartbeat-'));
    const ports = await freeServerPorts();
    const args = serverArgs(ports, stateDir, ADMIN_TOKEN, [
      '--redis-url',
      redis.url,
      '--log-level',
      'warn',
      '--heartbeat-interval',
      HEARTBEAT_INTERVAL,
      '--heartbeat-timeout',
      '30s',
      '--translation-debounce',
      DEBOUNCE,
    ]);
    let server: ServerProcess = startServerProcess(args);
    // The server first, then its state dir: it keeps writing there (kept contributions) after its first translation.
    t.after(async () => {
      await stopChild(server.proc, 'SIGKILL');
      await rm(stateDir, { recursive: true, force: true });
    });
    await waitHealthy(server, ports.httpPort, 60_000);
    const names = Array.from({ length: TIER_M.clusters }, (_, c) => clusterName(c));
    const { clusters, caPem } = await registerClusters(ports.httpPort, ADMIN_TOKEN, [...names, 'probe']);
    await stopChild(server.proc);

    // Redis gets every input as a replica would have left it, one cluster at a time (the workload is large).
    const store = createRedisSnapshotStore({ url: redis.url, replicaId: 'seed', logger: pino({ level: 'silent' }) });
    t.after(() => store.close());
    await waitFor(() => store.health().redisUp, { timeoutMs: 10_000 });
    let resources = 0;
    for (let c = 0; c < TIER_M.clusters; c++) {
      const input = generateClusterInput(TIER_M, c);
      resources += input.resources.length;
      await store.putInput(input);
    }
    await store.putInput(buildInputSnapshot({ cluster: 'probe', epoch: 'probe-epoch', generation: 1, resources: [] }));
    assert.equal(store.health().pendingWriteBack, 0, 'every input reached Redis');
    await store.close();
    // Each cluster had sent its first snapshot before the restart (intake marks it warm), so the
    // restarted server's safe-mode gate requires every one of them.
    const registry = await createFileClusterRegistry({
      dir: join(stateDir, 'registry'),
      tokenTtlSeconds: 3600,
      tokenOverlapSeconds: 60,
      logger: pino({ level: 'silent' }),
    });
    for (const name of [...names, 'probe'])
      await registry.setCondition(name, {
        type: 'ClusterWarm',
        status: 'True',
        reason: 'FirstSnapshotReceived',
        message: 'an input snapshot was received',
      });
    await registry.close();

    server = startServerProcess(args);
    await waitHealthy(server, ports.httpPort, 60_000);
    const probeToken = clusters.find((c) => c.name === 'probe')?.token ?? '';
    const heartbeats = await startHeartbeatProbe(t, {
      address: `localhost:${ports.relayPort}`,
      caPem,
      token: probeToken,
      cluster: 'probe',
    });
    const health = startHealthProbe(t, `http://127.0.0.1:${ports.httpPort}/healthz`);
    const translations = async (): Promise<number> =>
      metricEndingWith(await scrapeMetrics(ports.metricsPort), 'translation_duration_seconds_count') ?? 0;
    assert.equal(await translations(), 0, 'the probes are in place before the first translation');
    heartbeats.reset();
    health.reset();
    for (;;) {
      if (server.ended) assert.fail(`meshrelay-server ${server.ended} during the cold translation`);
      if ((await translations()) >= 1) break;
      await sleep(200);
    }
    const [beat, answer] = [heartbeats.window(), health.window()];
    t.diagnostic(
      `${resources} input resources; longest pause: heartbeats ${Math.round(beat.maxGapMs)} ms (${beat.count}), /healthz ${Math.round(answer.maxGapMs)} ms (${answer.count})`,
    );

    const res = await fetch(
      `http://127.0.0.1:${ports.httpPort}/api/v1/clusters/${clusterName(TIER_M.clusters - 1)}/output`,
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    );
    assert.equal(
      res.status,
      200,
      `the cold translation built no output for the last cluster: ${(await res.clone().text()).slice(0, 300)}`,
    );
    const output = (await res.json()) as { provenance: { cluster: string }[]; resources: { kind: string }[] };
    assert.equal(output.provenance.length, names.length + 1, 'built from every input');
    assert.ok(output.resources.some((r) => r.kind === 'ServiceEntry'));
    assert.ok(
      beat.count > 0 && beat.maxGapMs < MAX_GAP_MS,
      `heartbeats paused up to ${Math.round(beat.maxGapMs)} ms (${beat.count} arrived)`,
    );
    assert.ok(
      answer.count > 0 && answer.maxGapMs < MAX_GAP_MS,
      `/healthz paused up to ${Math.round(answer.maxGapMs)} ms (${answer.count} answers)`,
    );
    assert.equal(answer.failures, 0);
  },
);
