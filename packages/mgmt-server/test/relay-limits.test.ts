import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { ERROR_CATALOGUE, buildOutputSnapshot, sha256Hex, type OutputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  streamError,
} from './harness.ts';

async function pushStream(t: TestContext, flags: string[] = []) {
  const server = await startTestServer(t, flags);
  const a = await registerCluster(server, 'a');
  return { server, stream: openPush(mtlsClient(t, server, a)) };
}

function rawSocket(t: TestContext, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
    t.after(() => socket.destroy());
  });
}

/** Resolves when the server closed the socket; rejects after 5 s. */
function closed(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve();
    const timer = setTimeout(() => reject(new Error('the server kept the connection open for 5 s')), 5000);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const nackOf = (stream: ReturnType<typeof openPush>) => next(stream, (m) => m.ack ?? undefined);

test('given a header declaring billions of chunks, when it arrives, then the stream ends naming the chunk limit', async (t) => {
  const { stream } = await pushStream(t);
  const ended = streamError(stream);
  stream.write({
    header: { epoch: 'e', generation: 1, hash: 'a'.repeat(64), totalChunks: 4_294_967_295, totalBytes: 1000 },
  });
  const err = await ended;
  assert.equal(err.code, status.INVALID_ARGUMENT, err.details);
  assert.match(
    err.details,
    /MESHRELAY_ERR_PROTOCOL: snapshot header declares 4294967295 chunks; 1000 bytes travel in at most 2 chunks/,
  );
});

test('given a too large snapshot in honest chunks, when it arrives, then it is NACKed and its chunks are read and dropped', async (t) => {
  const { stream } = await pushStream(t, ['--max-snapshot-bytes', '4096']);
  stream.write({ header: { epoch: 'e', generation: 1, hash: 'a'.repeat(64), totalChunks: 3, totalBytes: 9000 } });
  for (let index = 0; index < 3; index++) stream.write({ chunk: { index, data: Buffer.alloc(3000) } });
  const nack = await nackOf(stream);
  assert.deepEqual([nack.accepted, nack.errorCode], [false, 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE']);
  const body = Buffer.from('[]');
  stream.write({
    header: { epoch: 'e', generation: 2, hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length },
  });
  stream.write({ chunk: { index: 0, data: body } });
  assert.equal((await nackOf(stream)).accepted, true, 'the next snapshot on the same stream is taken');
});

test('given a snapshot header, when its chunks carry more than the declared size, then the stream ends before they are buffered', async (t) => {
  const { stream } = await pushStream(t);
  const ended = streamError(stream);
  stream.write({ header: { epoch: 'e', generation: 1, hash: 'a'.repeat(64), totalChunks: 2, totalBytes: 2000 } });
  stream.write({ chunk: { index: 0, data: Buffer.alloc(64 * 1024) } });
  const err = await ended;
  assert.match(err.details, /MESHRELAY_ERR_PROTOCOL: snapshot chunks carry more than the declared 2000 bytes/);
});

test('given a snapshot that stalls half way, when the transfer deadline passes, then it is refused naming the deadline', async (t) => {
  const { stream } = await pushStream(t, ['--snapshot-transfer-timeout', '300']);
  const ended = streamError(stream);
  stream.write({ header: { epoch: 'e', generation: 1, hash: 'a'.repeat(64), totalChunks: 2, totalBytes: 3000 } });
  stream.write({ chunk: { index: 0, data: Buffer.alloc(2000) } });
  // Heartbeats keep the stream alive: only the deadline can end it.
  const beat = setInterval(() => stream.write({ heartbeat: { sentUnixMs: Date.now() } }), 50);
  t.after(() => clearInterval(beat));
  const err = await ended;
  assert.equal(err.code, status.DEADLINE_EXCEEDED, err.details);
  assert.match(err.details, /MESHRELAY_ERR_SNAPSHOT_TIMEOUT: .*300 ms \(--snapshot-transfer-timeout\)/);
});

test('given a resource nested thousands of levels deep, when pushed, then the snapshot is refused as INVALID_ARGUMENT naming the resource', async (t) => {
  const { server, stream } = await pushStream(t);
  const depth = 20_000;
  const body = Buffer.from(
    `[{"apiVersion":"v1","kind":"Service","metadata":{"name":"deep","namespace":"default"},"spec":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}]`,
  );
  stream.write({
    header: { epoch: 'e', generation: 1, hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length },
  });
  stream.write({ chunk: { index: 0, data: body } });
  const nack = await nackOf(stream);
  assert.deepEqual([nack.accepted, nack.errorCode], [false, 'MESHRELAY_ERR_INVALID_RESOURCE']);
  assert.equal(ERROR_CATALOGUE.MESHRELAY_ERR_INVALID_RESOURCE.grpc, status.INVALID_ARGUMENT);
  assert.match(nack.message ?? '', /Service default\/deep.* nested deeper than/);
  assert.equal(await server.store.getInput('a'), undefined);
});

function fillerOutput(i: number, bytes: number): OutputSnapshot {
  const resource = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `filler-${i}`, namespace: 'default' },
    data: { filler: randomBytes(bytes).toString('base64') },
  };
  return buildOutputSnapshot({ cluster: 'a', resources: [resource], provenance: [] });
}

test('given a Pull consumer that never reads, when many outputs are produced, then the server queues at most about one output for it', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const pull = openPull(mtlsClient(t, server, a));
  pull.write({ hello: { heldHash: '' } });
  // No 'data' listener: the client never takes what the server writes.
  await waitFor(() => server.connections.streams('a').some((s) => s.kind === 'pull'));
  const outputBytes = 512 * 1024;
  let largest = 0;
  for (let i = 0; i < 40; i++) {
    server.outputs.publish(fillerOutput(i, outputBytes));
    await new Promise((resolve) => setImmediate(resolve));
    for (const s of server.connections.streams('a')) largest = Math.max(largest, s.queuedBytes());
  }
  assert.ok(largest > 0, 'the first output was written');
  assert.ok(
    largest <= 2 * outputBytes,
    `the server queued ${largest} bytes for a reader that takes nothing (one output is ~${Math.round((outputBytes * 4) / 3)})`,
  );
  pull.cancel();
});

test('given the per-peer connection cap, when one more connection arrives from the same address, then the server closes it', async (t) => {
  const server = await startTestServer(t, ['--max-connections-per-peer', '3']);
  const held = await Promise.all([1, 2, 3].map(() => rawSocket(t, server.relayPort)));
  const extra = await rawSocket(t, server.relayPort);
  await closed(extra);
  assert.ok(
    held.every((s) => !s.destroyed),
    'the connections within the cap stay open',
  );
});

test('given a TCP connection that never starts TLS, when the handshake timeout passes, then the server closes it', async (t) => {
  const server = await startTestServer(t, ['--tls-handshake-timeout', '300']);
  const idle = await rawSocket(t, server.relayPort);
  await closed(idle);
  assert.ok(idle.destroyed);
});

test('given a 16 MiB snapshot being taken in, when the agent keeps sending heartbeats, then no heartbeat timeout fires even with a tight timeout', async (t) => {
  const { server, stream } = await pushStream(t, [
    '--heartbeat-interval',
    '50',
    '--heartbeat-timeout',
    '300',
    '--max-snapshot-bytes',
    String(20 * 1024 * 1024),
  ]);
  const resources = Array.from({ length: 4000 }, (_, i) => {
    const base = service(`svc-${i}`);
    return { ...base, metadata: { ...base.metadata, annotations: { note: randomBytes(1950).toString('hex') } } };
  });
  const errors: string[] = [];
  stream.on('error', (e: Error) => errors.push(e.message));
  const beat = setInterval(() => stream.write({ heartbeat: { sentUnixMs: Date.now() } }), 50);
  t.after(() => clearInterval(beat));
  const hash = pushSnapshot(stream, 'a', 1, resources);
  const ack = await next(stream, (m) => m.ack ?? undefined, 60_000);
  assert.deepEqual([ack.accepted, ack.hash], [true, hash]);
  const held = await server.store.getInput('a');
  assert.equal(held?.resources.length, 4000);
  assert.ok((held?.bytes ?? 0) > 15 * 1024 * 1024, `the snapshot has ${held?.bytes} bytes`);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(errors, [], 'the stream was not dropped');
  assert.equal(server.connections.streams('a').filter((s) => s.kind === 'push').length, 1);
});
