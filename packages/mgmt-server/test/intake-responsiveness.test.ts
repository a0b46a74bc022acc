import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, encodeSnapshotFramesSync, snapshotEncoding, type Resource } from '@meshrelay/api';
import type { TestContext } from 'node:test';
import {
  buildEndpointSlice,
  buildPod,
  buildService,
  startHealthProbe,
  startHeartbeatProbe,
  startRedisServer,
  waitFor,
} from '@meshrelay/testkit';
import { mtlsClient, next, openPush, registerCluster, relayTarget, startTestServer } from './harness.ts';

/** Longest pause of heartbeats or /healthz answers allowed while the snapshot is taken in (heartbeats every 100 ms). */
const MAX_GAP_MS = 1000;

/**
 * A cluster's discovery as it looks at scale: per service a Service, an EndpointSlice of 5 and 3 Pods (~16 MiB for
 * 9,000 services).
 */
function discovered(services: number): Resource[] {
  const resources: Resource[] = [];
  for (let i = 0; i < services; i++) {
    const ns = `team-${i % 20}`;
    const ports = [{ name: 'http', port: 8080 }];
    const ip = (j: number) => `10.${Math.floor(i / 250) % 250}.${i % 250}.${j + 1}`;
    resources.push(buildService({ name: `svc-${i}`, namespace: ns, ports, selector: { app: `svc-${i}` } }));
    resources.push(
      buildEndpointSlice({
        service: `svc-${i}`,
        namespace: ns,
        ports,
        endpoints: Array.from({ length: 5 }, (_, j) => ({ ip: ip(j), pod: `svc-${i}-${j}`, node: `node-${j}` })),
      }),
    );
    for (let j = 0; j < 3; j++)
      resources.push(
        buildPod({
          name: `svc-${i}-${j}`,
          namespace: ns,
          ip: ip(j),
          serviceAccount: `svc-${i}`,
          labels: { app: `svc-${i}`, version: 'v1' },
        }),
      );
  }
  return resources;
}

/**
 * Pushes a 16 MiB input snapshot to a server started with `flags` while another agent's stream
 * and a /healthz poller watch for pauses, until the ack and `alsoTaken` (whatever else must take
 * the snapshot in); asserts the snapshot was taken and neither paused long.
 */
async function takeLargeSnapshot(
  t: TestContext,
  flags: readonly string[],
  alsoTaken?: (hash: string) => Promise<void>,
): Promise<void> {
  // Translation waits long after the snapshot: what is measured is the intake alone.
  const server = await startTestServer(t, [
    '--heartbeat-interval',
    '100ms',
    '--heartbeat-timeout',
    '10s',
    '--max-snapshot-bytes',
    '24MiB',
    '--translation-debounce',
    '10m',
    ...flags,
  ]);
  const snapshot = buildInputSnapshot({ cluster: 'big', epoch: 'epoch-1', generation: 1, resources: discovered(9000) });
  assert.ok(snapshot.bytes > 16 * 1024 * 1024, `the snapshot has ${snapshot.bytes} bytes`);
  const frames = encodeSnapshotFramesSync({ ...snapshot, encoding: snapshotEncoding(snapshot) });
  const push = openPush(mtlsClient(t, server, await registerCluster(server, 'big')));
  t.after(() => push.cancel());
  const { token } = await server.registry.register('probe', {});
  const heartbeats = await startHeartbeatProbe(t, {
    address: relayTarget(server),
    caPem: server.ca.certPem,
    token,
    cluster: 'probe',
  });
  const health = startHealthProbe(t, `${server.api}/healthz`);

  heartbeats.reset();
  health.reset();
  push.write({ header: frames.header });
  for (const chunk of frames.chunks) push.write({ chunk });
  const ack = await next(push, (m) => m.ack ?? undefined, 120_000);
  await alsoTaken?.(snapshot.hash);
  const [beat, answer] = [heartbeats.window(), health.window()];
  t.diagnostic(`longest pause: heartbeats ${Math.round(beat.maxGapMs)} ms, /healthz ${Math.round(answer.maxGapMs)} ms`);

  assert.deepEqual([ack.accepted, ack.hash], [true, snapshot.hash]);
  assert.equal((await server.store.getInput('big'))?.hash, snapshot.hash, 'the snapshot was stored as sent');
  assert.ok(
    beat.count > 0 && beat.maxGapMs < MAX_GAP_MS,
    `heartbeats of the other stream paused up to ${Math.round(beat.maxGapMs)} ms (${beat.count} arrived)`,
  );
  assert.ok(
    answer.count > 0 && answer.maxGapMs < MAX_GAP_MS,
    `/healthz paused up to ${Math.round(answer.maxGapMs)} ms (${answer.count} answers)`,
  );
  assert.equal(answer.failures, 0);
}

test('given a 16 MiB input snapshot being taken in, when another agent streams heartbeats and /healthz is polled, then neither pauses for long', async (t) => {
  await takeLargeSnapshot(t, []);
});

test('given a server on Redis taking in a 16 MiB input snapshot, when another agent streams heartbeats and /healthz is polled, then neither pauses for long', async (t) => {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  await takeLargeSnapshot(t, ['--redis-url', redis.url]);
});

test('given two replicas on one Redis, when one takes in a 16 MiB input snapshot and the other reads it from Redis, then heartbeats and /healthz do not pause for long', async (t) => {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const other = await startTestServer(t, [
    '--redis-url',
    redis.url,
    '--translation-debounce',
    '10m',
    '--replica-name',
    'test-1',
  ]);
  await waitFor(() => other.store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  await takeLargeSnapshot(t, ['--redis-url', redis.url], async (hash) => {
    await waitFor(() => other.store.memoryInputs().get('big')?.hash === hash, {
      timeoutMs: 120_000,
      message: 'the other replica never read the snapshot',
    });
  });
});
