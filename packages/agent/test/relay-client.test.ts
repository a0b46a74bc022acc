import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { buildOutputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { inputSnapshot, logged, service, startClient, startServer } from './support/relay-harness.ts';

test('given a fresh agent with a token, when it starts, then it registers, pushes over mTLS and the server acks', async (t) => {
  const server = await startServer(t);
  const { client, lines, stateDir } = await startClient(t, [server.address]);
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  assert.deepEqual(server.registrations, [{ cluster: 'east', token: 'good-token' }]);
  assert.equal(server.pushed[0]?.cluster, 'east', 'the server took the cluster from the client certificate');
  assert.equal(server.pushed[0]?.hash, inputSnapshot(1, 'reviews').hash);
  assert.equal(client.status.lastAcked?.generation, 1);
  assert.ok(logged(lines, /^snapshot acked$/));
  assert.equal((await stat(path.join(stateDir, 'client-certificate.json'))).mode & 0o777, 0o600);
  assert.equal((await stat(path.join(stateDir, 'client-key.json'))).mode & 0o777, 0o600);
  await waitFor(() => client.status.pushConnected && client.status.pullConnected && client.status.address === server.address);
});

test('given a persisted valid certificate, when the agent restarts, then it does not register again', async (t) => {
  const server = await startServer(t);
  const first = await startClient(t, [server.address]);
  await waitFor(() => first.client.status.everAccepted, { timeoutMs: 10_000 });
  const key = await readFile(path.join(first.stateDir, 'client-key.json'), 'utf8');
  await first.client.stop();
  const second = await startClient(t, [server.address], { stateDir: first.stateDir });
  await waitFor(() => second.client.status.everAccepted, { timeoutMs: 10_000 });
  assert.equal(server.registrations.length, 1);
  assert.equal(await readFile(path.join(first.stateDir, 'client-key.json'), 'utf8'), key, 'the private key is kept');
});

test('given a snapshot in flight, when several newer ones are produced before the ack, then only the latest is sent next', async (t) => {
  const server = await startServer(t, { autoAck: false });
  const harness = await startClient(t, [server.address]);
  await waitFor(() => server.pushed.length === 1, { timeoutMs: 10_000 });
  harness.setLatest(inputSnapshot(2, 'reviews', 'a'));
  harness.setLatest(inputSnapshot(3, 'reviews', 'b'));
  harness.setLatest(inputSnapshot(4, 'reviews', 'c'));
  // Give the client a chance to (wrongly) send while the first is unacked.
  await waitFor(() => server.heartbeats >= 3);
  assert.deepEqual(server.pushed.map((p) => p.generation), [1]);
  server.ack(inputSnapshot(1, 'reviews').hash, 1);
  await waitFor(() => server.pushed.length === 2);
  assert.equal(server.pushed[1]?.generation, 4);
  assert.equal(server.pushed[1]?.hash, inputSnapshot(4, 'reviews', 'c').hash);
});

test('given an output on the server, when the agent pulls, then it applies it and acks its hash', async (t) => {
  const output = buildOutputSnapshot({ cluster: 'east', resources: [], provenance: [{ cluster: 'east', inputHash: 'b'.repeat(64) }] });
  const server = await startServer(t, { output });
  const harness = await startClient(t, [server.address]);
  await waitFor(() => server.pullAcks.length === 1, { timeoutMs: 10_000 });
  assert.deepEqual(server.hellos, ['']);
  assert.equal(server.pullAcks[0]?.hash, output.hash);
  assert.equal(server.pullAcks[0]?.accepted, true);
  assert.equal(harness.applied[0]?.hash, output.hash);
  assert.deepEqual(harness.applied[0]?.provenance, output.provenance);
});

test('given a connected agent, when the server sends an output whose content does not match its hash, then the agent acks accepted=false', async (t) => {
  const server = await startServer(t);
  const harness = await startClient(t, [server.address]);
  await waitFor(() => server.pullCalls.size === 1, { timeoutMs: 10_000 });
  const real = buildOutputSnapshot({ cluster: 'east', resources: [service('x')], provenance: [] });
  server.sendOutput({ ...real, hash: 'f'.repeat(64) });
  await waitFor(() => server.pullAcks.length === 1);
  assert.equal(server.pullAcks[0]?.accepted, false);
  assert.equal(server.pullAcks[0]?.errorCode, 'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH');
  assert.deepEqual(harness.applied, []);
});

test('given heartbeats both ways, when the streams idle for several timeouts, then the agent stays on the same streams', async (t) => {
  const server = await startServer(t);
  const { client } = await startClient(t, [server.address]);
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  const before = server.heartbeats;
  // 600 ms timeout, push heartbeats every 100 ms: 18 of them span three timeouts.
  await waitFor(() => server.heartbeats >= before + 18, { timeoutMs: 10_000 });
  assert.equal(server.pushStreamSerials.length, 1, 'no reconnect happened');
  assert.ok(client.status.pushConnected);
});

test('given two addresses, when the first server sends go-away, then the agent moves to the second', async (t) => {
  const a = await startServer(t);
  const b = await startServer(t);
  const { client, lines } = await startClient(t, [a.address, b.address]);
  await waitFor(() => client.status.everAccepted && client.status.address === a.address, { timeoutMs: 10_000 });
  a.goAway(50, 'replica draining');
  await waitFor(() => b.pushed.length === 1 && client.status.address === b.address, { timeoutMs: 5000 });
  assert.equal(b.pushed[0]?.hash, inputSnapshot(1, 'reviews').hash, 'the full current snapshot is sent first on the new connection');
  assert.equal(a.pushStreamSerials.length, 1);
  assert.ok(logged(lines, /go-away/));
});

test('given a server that accepts streams but never answers, when the heartbeat timeout passes, then the agent leaves it for the next address', async (t) => {
  const frozen = await startServer(t, { silent: true });
  const healthy = await startServer(t);
  const { lines } = await startClient(t, [frozen.address, healthy.address]);
  await waitFor(() => frozen.pushed.length === 1, { timeoutMs: 10_000 });
  const arrived = Date.now();
  await waitFor(() => healthy.pushed.length === 1, { timeoutMs: 5000 });
  const elapsed = Date.now() - arrived;
  assert.ok(elapsed < 600 + 1000, `left the silent server after ${elapsed} ms`);
  assert.ok(logged(lines, /silent/));
});

test('given a push stream ended as fenced, when the agent backs off, then it waits at least the fenced backoff', async (t) => {
  const server = await startServer(t);
  const { client, lines } = await startClient(t, [server.address], { fencedBackoffMs: 700 });
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  const fencedAt = Date.now();
  server.failPushStreams(status.ABORTED, 'MESHRELAY_ERR_FENCED: a newer connection for cluster east took over');
  await waitFor(() => server.pushed.length === 2, { timeoutMs: 5000 });
  assert.ok(Date.now() - fencedAt >= 700, `reconnected after ${Date.now() - fencedAt} ms`);
  assert.ok(logged(lines, /^FENCED/));
});

test('given the server refuses a snapshot by ending the stream, when the agent reconnects, then it sends its full snapshot again', async (t) => {
  const server = await startServer(t, { autoAck: false });
  const { lines } = await startClient(t, [server.address]);
  await waitFor(() => server.pushed.length === 1, { timeoutMs: 10_000 });
  server.failPushStreams(status.RESOURCE_EXHAUSTED, 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE: snapshot exceeds the limit');
  await waitFor(() => server.pushed.length === 2, { timeoutMs: 5000 });
  assert.equal(server.pushed[1]?.hash, server.pushed[0]?.hash);
  assert.ok(logged(lines, /MESHRELAY_ERR_SNAPSHOT_TOO_LARGE/));
});

test('given a re-registered cluster, when the old certificate is refused, then the agent drops it and registers again with the token', async (t) => {
  const server = await startServer(t);
  const { client, lines } = await startClient(t, [server.address]);
  await waitFor(() => client.status.everAccepted, { timeoutMs: 10_000 });
  server.uid = 'uid-2';
  server.failPushStreams(status.UNAUTHENTICATED, 'MESHRELAY_ERR_UNAUTHENTICATED: certificate of an earlier registration');
  await waitFor(() => server.registrations.length === 2 && server.pushed.length === 2, { timeoutMs: 10_000 });
  assert.ok(logged(lines, /dropping the client certificate and registering again/));
});

test('given a wrong token, when the agent registers, then it logs the refusal clearly and keeps backing off without a certificate', async (t) => {
  const server = await startServer(t, { token: 'the-real-token' });
  const { client, lines, stateDir } = await startClient(t, [server.address]);
  await waitFor(() => server.registrations.length >= 2, { timeoutMs: 10_000 });
  assert.ok(logged(lines, /^registration refused: the relay token is wrong/));
  assert.equal(client.status.everAccepted, false);
  await assert.rejects(stat(path.join(stateDir, 'client-certificate.json')), { code: 'ENOENT' });
});

test('given a certificate past two thirds of its lifetime, when the renewal check runs, then the agent renews and reconnects with the new certificate', async (t) => {
  // Issued certificates start 60 s in the past; a 31 s remainder leaves less than a third of 91 s within a second.
  const server = await startServer(t, { clientCertLifetimeSeconds: 31 });
  const { lines } = await startClient(t, [server.address], { renewCheckIntervalMs: 100 });
  await waitFor(() => server.renewals.length >= 1 && server.pushStreamSerials.length >= 2, { timeoutMs: 10_000 });
  assert.notEqual(server.pushStreamSerials[1], server.pushStreamSerials[0], 'the new stream uses the renewed certificate');
  assert.equal(server.registrations.length, 1);
  assert.ok(logged(lines, /client certificate renewed/));
});

test('given a snapshot larger than --max-snapshot-bytes, when the agent would push it, then it logs the refusal and sends nothing', async (t) => {
  const server = await startServer(t);
  const names = Array.from({ length: 40 }, (_, i) => `service-${i}`);
  const big = inputSnapshot(1, ...names);
  assert.ok(big.bytes > 2048);
  const harness = await startClient(t, [server.address], { maxSnapshotBytes: 2048 });
  harness.setLatest(big);
  await waitFor(() => logged(harness.lines, /exceeds --max-snapshot-bytes/), { timeoutMs: 10_000 });
  await waitFor(() => server.heartbeats >= 3);
  assert.deepEqual(server.pushed, []);
  assert.equal(harness.client.status.everAccepted, false);
});
