import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { FileCredentialStore } from '../src/credentials/credential-store.ts';
import { RelayClient } from '../src/relay/relay-client.ts';
import { captureLogger } from './support/fixtures.ts';
import {
  inputSnapshot,
  logged,
  loggedCount,
  service,
  startClient,
  startRelay,
  type RelayUnderTest,
} from './support/relay-harness.ts';

const REACHABLE_AGAIN = /^relay server reachable again/;

test('given an agent deep in a long backoff, when its server becomes reachable again, then it reconnects without waiting out the backoff', async (t) => {
  const relay = await startRelay(t);
  // Every failure waits ~60 s: only the reachability probe can bring the agent back within the test's deadline.
  const harness = await startClient(t, [relay], {
    backoff: { baseMs: 60_000, capMs: 60_000, random: () => 0.99 },
    reachabilityProbeMs: 50,
  });
  await waitFor(() => harness.client.status.everAccepted && harness.client.status.pullConnected, { timeoutMs: 10_000 });

  relay.proxy.setDown(true);
  relay.proxy.cut();
  await waitFor(() => !harness.client.status.pushConnected && !harness.client.status.pullConnected, {
    timeoutMs: 10_000,
  });
  // The agent has found the server gone at least twice (the probe at the start of its wait, and one more).
  await waitFor(() => relay.proxy.refused >= 2, { timeoutMs: 10_000 });
  const snapshotsBefore = harness.sent.length;
  harness.setLatest(inputSnapshot(2, 'reviews', 'ratings'));
  relay.proxy.setDown(false);

  await waitFor(() => harness.client.status.pushConnected && harness.client.status.pullConnected, {
    timeoutMs: 15_000,
  });
  await waitFor(() => relay.stored.at(-1)?.generation === 2, { timeoutMs: 10_000 });
  assert.equal(loggedCount(harness.lines, REACHABLE_AGAIN), 1, 'one backoff wait was cut short');
  assert.ok(harness.sent.length > snapshotsBefore);
  const ended = harness.lines.filter((l) => String(l['msg']).startsWith('relay connection ended'));
  assert.equal(ended.length, 1, 'no further failed attempt was needed');
  assert.ok(Number(ended[0]?.['delayMs']) >= 59_000, 'the backoff it skipped was the long one');
});

test('given a server that is up but refuses the agent, when the agent backs off, then the probe does not cut its wait short', async (t) => {
  const relay = await startRelay(t);
  const harness = await startClient(t, [relay], {
    token: () => Promise.resolve('not-the-token'),
    backoff: { baseMs: 600, capMs: 600, random: () => 0.99 },
    reachabilityProbeMs: 50,
  });
  await waitFor(() => loggedCount(harness.lines, /^registration refused/) >= 2, { timeoutMs: 10_000 });
  assert.equal(logged(harness.lines, REACHABLE_AGAIN), false);
});

interface StormAgent {
  readonly client: RelayClient;
  readonly cluster: string;
}

async function startStormAgent(t: TestContext, relay: RelayUnderTest, cluster: string): Promise<StormAgent> {
  const { token } = await relay.server.registry.register(cluster, {});
  const stateDir = await mkdtemp(path.join(tmpdir(), 'meshrelay-storm-'));
  const { logger } = captureLogger();
  const snapshot = buildInputSnapshot({ cluster, epoch: 'epoch-1', generation: 1, resources: [service('reviews')] });
  const client = new RelayClient({
    cluster,
    serverAddresses: [relay.address],
    rootCaPem: () => Promise.resolve(relay.caPem),
    token: () => Promise.resolve(token),
    credentials: new FileCredentialStore({ stateDir, cluster, logger }),
    latestSnapshot: () => snapshot,
    heldOutput: () => undefined,
    applyOutput: () => Promise.resolve(),
    heartbeatIntervalMs: 200,
    heartbeatTimeoutMs: 5000,
    maxSnapshotBytes: 1024 * 1024,
    logger,
    backoff: { baseMs: 20, capMs: 200 },
  });
  t.after(async () => {
    await client.stop();
    await rm(stateDir, { recursive: true, force: true });
  });
  return { client, cluster };
}

/** The most admissions inside any window of `windowMs` starting at an admission. */
function mostInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  return Math.max(0, ...sorted.map((start) => sorted.filter((x) => x >= start && x < start + windowMs).length));
}

test('given a low admit rate, when twenty agents connect at once, then the server admits at most the rate per second and every agent resyncs', async (t) => {
  const rate = 4;
  const { logger, lines } = captureLogger();
  const relay = await startRelay(t, { flags: ['--relay-admit-rate', String(rate)], logger });
  const agents = await Promise.all(Array.from({ length: 20 }, (_, i) => startStormAgent(t, relay, `storm-${i}`)));
  for (const agent of agents) agent.client.start();

  await waitFor(() => agents.every((a) => a.client.status.everAccepted && a.client.status.pullConnected), {
    timeoutMs: 60_000,
  });
  const admitted = lines.filter((l) => l['msg'] === 'relay session admitted').map((l) => Number(l['time']));
  const paced = lines.filter((l) => String(l['msg']).startsWith('relay admit rate reached'));
  assert.ok(admitted.length >= agents.length, `every agent was admitted (${admitted.length})`);
  assert.ok(paced.length > 0, 'the excess was told to retry later');
  // A bucket of one second's worth refilled at `rate`: any one-second window admits at most 2 × rate.
  assert.ok(
    mostInWindow(admitted, 1000) <= 2 * rate,
    `at most ${2 * rate} admissions in any second (got ${mostInWindow(admitted, 1000)})`,
  );
  for (const line of paced) assert.ok(Number(line['retryAfterMs']) > 0);
});
