import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import {
  inputSnapshot,
  logged,
  loggedCount,
  service,
  settled,
  startClient,
  startRelay,
  startReplica,
  type RelayUnderTest,
} from './support/relay-harness.ts';

const REGISTERING = /^registering with the relay token$/;

/** Resolves once the proxy has carried `chunks` more server→agent chunks (heartbeats included) than now. */
function moreTraffic(relay: RelayUnderTest, chunks: number): Promise<void> {
  const target = relay.proxy.forwarded.down + chunks;
  return waitFor(() => relay.proxy.forwarded.down >= target, { timeoutMs: 10_000 });
}

const streamIds = (relay: RelayUnderTest, kind: 'push' | 'pull') =>
  relay.server.connections
    .streams('east')
    .filter((s) => s.kind === kind)
    .map((s) => s.id);

async function metric(relay: RelayUnderTest, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${relay.server.metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes('cluster="east"'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

test('given a fresh agent with a token, when it starts, then it registers, pushes over mTLS and the server acks', async (t) => {
  const relay = await startRelay(t);
  const { client, lines, stateDir } = await startClient(t, [relay]);
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  assert.equal(loggedCount(lines, REGISTERING), 1);
  assert.equal(relay.stored[0]?.cluster, 'east', 'the server took the cluster from the client certificate');
  assert.equal(relay.stored[0]?.hash, inputSnapshot(1, 'reviews').hash);
  assert.equal(client.status.lastAcked?.generation, 1);
  assert.ok(logged(lines, /^snapshot acked$/));
  assert.equal((await stat(path.join(stateDir, 'client-certificate.json'))).mode & 0o777, 0o600);
  assert.equal((await stat(path.join(stateDir, 'client-key.json'))).mode & 0o777, 0o600);
  await waitFor(
    () => client.status.pushConnected && client.status.pullConnected && client.status.address === relay.address,
  );
});

test('given a persisted valid certificate, when the agent restarts, then it does not register again', async (t) => {
  const relay = await startRelay(t);
  const first = await startClient(t, [relay]);
  await waitFor(() => first.client.status.everAccepted, { timeoutMs: 10_000 });
  const key = await readFile(path.join(first.stateDir, 'client-key.json'), 'utf8');
  await first.client.stop();
  const second = await startClient(t, [relay], { stateDir: first.stateDir });
  await waitFor(() => second.client.status.everAccepted, { timeoutMs: 10_000 });
  assert.equal(loggedCount(second.lines, REGISTERING), 0);
  assert.equal(await readFile(path.join(first.stateDir, 'client-key.json'), 'utf8'), key, 'the private key is kept');
});

test('given a snapshot in flight, when several newer ones are produced before the ack, then only the latest is sent next', async (t) => {
  const relay = await startRelay(t, { flags: ['--heartbeat-timeout', '10000'] });
  const harness = await startClient(t, [relay], { heartbeatTimeoutMs: 10_000 });
  await waitFor(() => harness.client.status.everAccepted, { timeoutMs: 10_000 });
  relay.proxy.freeze();
  harness.setLatest(inputSnapshot(2, 'reviews', 'a'));
  harness.setLatest(inputSnapshot(3, 'reviews', 'b'));
  harness.setLatest(inputSnapshot(4, 'reviews', 'c'));
  await waitFor(() => harness.sent.length === 2);
  assert.deepEqual(
    harness.sent.map((s) => s.generation),
    [1, 2],
    'generation 2 is in flight; 3 and 4 wait for its ack',
  );
  relay.proxy.thaw();
  await waitFor(() => harness.acks.length === 3, { timeoutMs: 10_000 });
  assert.deepEqual(
    harness.sent.map((s) => s.generation),
    [1, 2, 4],
  );
  assert.deepEqual(
    relay.stored.map((s) => s.generation),
    [1, 2, 4],
  );
});

test('given an output on the server, when the agent pulls, then it applies it and the server records the ack', async (t) => {
  const relay = await startRelay(t);
  const output = relay.publish([], [{ cluster: 'east', inputHash: 'b'.repeat(64) }]);
  const harness = await startClient(t, [relay]);
  await waitFor(() => harness.applied.length >= 1, { timeoutMs: 10_000 });
  assert.equal(harness.applied[0]?.hash, output.hash);
  assert.deepEqual(harness.applied[0]?.provenance, output.provenance);
  await waitFor(() => relay.server.connections.applied('east') === harness.applied.at(-1)?.hash);
});

test('given an output the agent cannot apply, when it arrives, then the agent acks accepted=false and the server counts the refusal', async (t) => {
  const relay = await startRelay(t);
  relay.publish([service('x')]);
  const harness = await startClient(t, [relay], {
    applyOutput: () => Promise.reject(new MeshrelayError('MESHRELAY_ERR_INVALID_RESOURCE', 'the cluster refused it')),
  });
  await waitFor(async () => (await metric(relay, 'relay_output_refusals_total')) >= 1, { timeoutMs: 10_000 });
  assert.ok(logged(harness.lines, /^output refused: MESHRELAY_ERR_INVALID_RESOURCE/));
  assert.equal(relay.server.connections.applied('east'), '', 'the server still sees the agent on what it held before');
});

test('given heartbeats both ways, when the streams idle for several timeouts, then the agent stays on the same streams', async (t) => {
  const relay = await startRelay(t);
  const { client } = await startClient(t, [relay]);
  await waitFor(() => client.status.everAccepted && client.status.pullConnected, { timeoutMs: 10_000 });
  const before = [streamIds(relay, 'push'), streamIds(relay, 'pull')];
  // 600 ms timeout, heartbeats every 100 ms on two streams: 36 chunks span three timeouts.
  await moreTraffic(relay, 36);
  assert.deepEqual([streamIds(relay, 'push'), streamIds(relay, 'pull')], before, 'no reconnect happened');
  assert.ok(client.status.pushConnected);
});

test('given two replicas, when the first sends go-away, then the agent moves to the second', async (t) => {
  const a = await startRelay(t);
  const b = await startReplica(t, a);
  const { client, lines } = await startClient(t, [a, b]);
  await waitFor(() => client.status.everAccepted && client.status.address === a.address, { timeoutMs: 10_000 });
  for (const stream of a.server.connections.streams('east')) stream.goAway(50, 'replica draining');
  await waitFor(() => b.stored.length === 1 && client.status.address === b.address, { timeoutMs: 5000 });
  assert.equal(
    b.stored[0]?.hash,
    inputSnapshot(1, 'reviews').hash,
    'the full current snapshot is sent first on the new connection',
  );
  assert.equal(a.stored.length, 1);
  assert.ok(logged(lines, /go-away/));
});

test('given two replicas, when the first one stops (drain), then it sends go-away before closing and the agent moves to the second', async (t) => {
  const a = await startRelay(t);
  const b = await startReplica(t, a);
  const { client, lines } = await startClient(t, [a, b]);
  await waitFor(() => client.status.everAccepted && client.status.address === a.address, { timeoutMs: 10_000 });
  await a.server.stop();
  await waitFor(() => client.status.address === b.address && client.status.pushConnected, { timeoutMs: 5000 });
  assert.ok(logged(lines, /^server sent go-away/), 'the go-away arrived before the connection closed');
});

test('given a server whose connection freezes, when the heartbeat timeout passes, then the agent leaves it for the next address', async (t) => {
  const frozen = await startRelay(t);
  const healthy = await startReplica(t, frozen);
  const { client, lines } = await startClient(t, [frozen, healthy]);
  await waitFor(() => client.status.everAccepted && client.status.address === frozen.address, { timeoutMs: 10_000 });
  frozen.proxy.freeze();
  await waitFor(() => healthy.stored.length === 1, { timeoutMs: 5000 });
  assert.ok(logged(lines, /silent/));
});

test('given connection attempts that failed while the server was down, when it is back, then no attempt the agent gave up connects on its own', async (t) => {
  const relay = await startRelay(t);
  const { client, lines } = await startClient(t, [relay]);
  await waitFor(() => client.status.everAccepted && client.status.pushConnected, { timeoutMs: 10_000 });
  // A restarting server: its port accepts and resets, and comes back within a second.
  relay.proxy.setDown(true);
  relay.proxy.cut();
  await waitFor(() => loggedCount(lines, /^relay connection ended/) >= 6, { timeoutMs: 10_000 });
  await client.stop();
  relay.proxy.setDown(false);
  // gRPC's own reconnect backoff starts at 1 s (±20 %): a channel the agent closed after a failed
  // attempt would connect by itself then and hold a connection no session uses, one per attempt,
  // until the server's idle timeout. In a reconnect storm those fill --max-connections-per-peer.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  assert.equal(relay.proxy.connections, 0, 'connections opened after the agent stopped');
});

test('given a newer agent for the same cluster, when it fences this one, then this one waits at least the fenced backoff', async (t) => {
  const relay = await startRelay(t);
  const older = await startClient(t, [relay], { fencedBackoffMs: 700 });
  await waitFor(() => older.client.status.everAccepted, { timeoutMs: 10_000 });
  // The same cluster's agent started again elsewhere with its credentials (as from the chart's
  // shared Secret): a relay token registers one key, so a second key could not register at all.
  const newer = await startClient(t, [relay], { stateDir: older.stateDir });
  await waitFor(() => logged(older.lines, /^FENCED/), { timeoutMs: 10_000 });
  const fencedAt = Date.now();
  await newer.client.stop();
  await waitFor(() => older.sent.length === 2, { timeoutMs: 5000 });
  assert.ok(Date.now() - fencedAt >= 700 - 50, `reconnected ${Date.now() - fencedAt} ms after being fenced`);
});

test('given a snapshot the server refuses, when it is NACKed, then the agent logs it, keeps the stream and sends only a new snapshot', async (t) => {
  const relay = await startRelay(t, { flags: ['--max-resources', '1'] });
  const harness = await startClient(t, [relay]);
  await waitFor(() => harness.client.status.everAccepted, { timeoutMs: 10_000 });
  const push = streamIds(relay, 'push');
  harness.setLatest(inputSnapshot(2, 'reviews', 'ratings'));
  await waitFor(() => harness.acks.length === 2);
  assert.deepEqual(
    [harness.acks[1]?.accepted, harness.acks[1]?.errorCode],
    [false, 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE'],
  );
  assert.ok(
    logged(harness.lines, /^snapshot rejected by the server: MESHRELAY_ERR_SNAPSHOT_TOO_LARGE.*not sent again/),
  );
  await moreTraffic(relay, 12);
  assert.deepEqual(streamIds(relay, 'push'), push, 'the stream stayed up');
  // Not even a new connection re-sends the refused snapshot.
  relay.proxy.cut();
  await waitFor(() => streamIds(relay, 'push').length === 1 && streamIds(relay, 'push')[0] !== push[0], {
    timeoutMs: 5000,
  });
  await moreTraffic(relay, 12);
  assert.equal(harness.sent.length, 2);
  harness.setLatest(inputSnapshot(3, 'details'));
  await waitFor(() => harness.acks.length === 3);
  assert.deepEqual([harness.sent.at(-1)?.generation, harness.acks[2]?.accepted], [3, true]);
  assert.equal(relay.stored.at(-1)?.generation, 3);
});

test('given a re-registered cluster, when the old certificate is refused, then the agent drops it and registers again with the token', async (t) => {
  const relay = await startRelay(t);
  const { client, lines } = await startClient(t, [relay]);
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  // The agent is kept off the server while the registry swaps the cluster (deregistration, then a
  // new registration and token): an attempt made between the two would register with the old
  // token, be refused, and after a few such refusals be rate limited for a minute.
  relay.proxy.setDown(true);
  relay.proxy.cut();
  await relay.reregister();
  relay.proxy.setDown(false);
  await waitFor(() => relay.stored.length === 2, {
    timeoutMs: 10_000,
    message: 'no snapshot was stored after the re-registration',
  });
  assert.equal(loggedCount(lines, REGISTERING), 2, 'it registered again with the token, once');
  assert.ok(logged(lines, /dropping the client certificate and registering again/));
});

test('given a wrong token, when the agent registers, then it logs the refusal clearly and keeps backing off without a certificate', async (t) => {
  const relay = await startRelay(t);
  const { client, lines, stateDir } = await startClient(t, [relay], { token: () => Promise.resolve('not-the-token') });
  await waitFor(() => loggedCount(lines, /^registration refused: the relay token is wrong/) >= 2, {
    timeoutMs: 10_000,
  });
  assert.equal(client.status.everAccepted, false);
  await assert.rejects(stat(path.join(stateDir, 'client-certificate.json')), { code: 'ENOENT' });
});

test('given a certificate past two thirds of its lifetime, when the renewal check runs, then the agent renews and reconnects with the new certificate', async (t) => {
  // Issued certificates start 60 s in the past; a 31 s remainder leaves less than a third of 91 s within a second.
  const relay = await startRelay(t, { flags: ['--client-cert-lifetime', '31'] });
  const { lines } = await startClient(t, [relay], { renewCheckIntervalMs: 100 });
  await waitFor(() => logged(lines, /client certificate renewed/), { timeoutMs: 10_000 });
  const renewedAt = lines.findIndex((l) => /client certificate renewed/.test(String(l['msg'])));
  // The server takes a snapshot over a stream opened with the renewed certificate.
  await waitFor(() => lines.slice(renewedAt).some((l) => l['msg'] === 'snapshot acked'), { timeoutMs: 10_000 });
  assert.ok(streamIds(relay, 'push').length === 1);
  assert.equal(loggedCount(lines, REGISTERING), 1, 'renewed over mTLS, not registered again');
});

test('given a snapshot larger than --max-snapshot-bytes, when the agent would push it, then it logs the refusal and sends nothing', async (t) => {
  const relay = await startRelay(t);
  const names = Array.from({ length: 40 }, (_, i) => `service-${i}`);
  const big = inputSnapshot(1, ...names);
  assert.ok(big.bytes > 2048);
  const harness = await startClient(t, [relay], { maxSnapshotBytes: 2048 });
  harness.setLatest(big);
  await waitFor(() => logged(harness.lines, /exceeds --max-snapshot-bytes/), { timeoutMs: 10_000 });
  await waitFor(() => harness.client.status.pushConnected, { timeoutMs: 10_000 });
  await moreTraffic(relay, 12);
  assert.deepEqual(harness.sent, []);
  assert.deepEqual(relay.stored, []);
  assert.equal(harness.client.status.everAccepted, false);
});

test('given an agent stalled by a long apply, when it resumes, then it does not take its own stall for a silent server', async (t) => {
  const relay = await startRelay(t);
  let stalls = 0;
  const harness = await startClient(t, [relay], {
    applyOutput: () => {
      stalls++;
      // A synchronous stall of more than twice the 600 ms heartbeat timeout, as a huge apply would cause.
      const until = Date.now() + 1500;
      while (Date.now() < until);
      return Promise.resolve();
    },
  });
  await waitFor(() => harness.client.status.everAccepted && settled(relay), { timeoutMs: 20_000 });
  const before = [streamIds(relay, 'push'), streamIds(relay, 'pull')];
  const seen = stalls;
  const output = relay.publish([service('stall')]);
  await waitFor(() => stalls > seen && relay.server.connections.applied('east') === output.hash, { timeoutMs: 10_000 });
  await moreTraffic(relay, 24);
  assert.ok(!logged(harness.lines, /silent/), 'the agent did not report the server silent');
  assert.deepEqual([streamIds(relay, 'push'), streamIds(relay, 'pull')], before, 'no reconnect happened');
});

test('given a server with no output for the agent yet and no heartbeat due for a minute, when the agent opens its pull stream, then it sees the stream open at once', async (t) => {
  // No translation for a minute (so no output to send) and no heartbeat either way within the test.
  const relay = await startRelay(t, {
    flags: ['--translation-debounce', '60s', '--heartbeat-interval', '60s', '--heartbeat-timeout', '180s'],
  });
  const { client, applied } = await startClient(t, [relay], {
    heartbeatIntervalMs: 60_000,
    heartbeatTimeoutMs: 180_000,
  });
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  await waitFor(() => client.status.pullConnected, { timeoutMs: 10_000 });
  assert.equal(applied.length, 0, 'no output was sent on the pull stream');
});
