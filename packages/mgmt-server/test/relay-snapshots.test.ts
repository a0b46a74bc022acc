import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import { ERROR_CATALOGUE, RELAY_SERVICE, sha256Hex, type ErrorCode, type relay } from '@meshrelay/api';
import { certificateInfo, createCsr, generateKeyPair } from '@meshrelay/certs';
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
  virtualDestination,
} from './harness.ts';

async function connected(t: Parameters<typeof startTestServer>[0], flags: string[] = []) {
  const server = await startTestServer(t, flags);
  const a = await registerCluster(server, 'a');
  const client = mtlsClient(t, server, a);
  const stream = openPush(client);
  const hash = pushSnapshot(stream, 'a', 1, [service('x')]);
  await next(stream, (m) => m.ack ?? undefined);
  return { server, a, client, stream, hash };
}

test('given an accepted push, then the cluster becomes warm and the ack names the hash', async (t) => {
  const { server, hash } = await connected(t);
  const input = await server.store.getInput('a');
  assert.equal(input?.hash, hash);
  const warm = server.registry.get('a')?.status?.conditions?.find((c) => c.type === 'ClusterWarm');
  assert.equal(warm?.status, 'True');
  assert.equal(warm?.reason, 'FirstSnapshotReceived');
});

const badSnapshots: { name: string; code: number; errCode: RegExp; send: (s: ReturnType<typeof openPush>) => void }[] =
  [
    {
      name: 'larger than the limit',
      code: status.RESOURCE_EXHAUSTED,
      errCode: /MESHRELAY_ERR_SNAPSHOT_TOO_LARGE/,
      send: (s) => {
        s.write({
          header: { epoch: 'epoch-1', generation: 2, hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 10_000_000 },
        });
        s.write({ chunk: { index: 0, data: Buffer.from('[]') } });
      },
    },
    {
      name: 'not matching its hash',
      code: status.DATA_LOSS,
      errCode: /MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH/,
      send: (s) => {
        s.write({ header: { epoch: 'epoch-1', generation: 2, hash: 'b'.repeat(64), totalChunks: 1, totalBytes: 2 } });
        s.write({ chunk: { index: 0, data: Buffer.from('[]') } });
      },
    },
    {
      name: 'undecodable',
      code: status.INVALID_ARGUMENT,
      errCode: /MESHRELAY_ERR_SNAPSHOT_UNDECODABLE/,
      send: (s) => {
        const body = Buffer.from('{"not":"an array"}');
        s.write({
          header: { epoch: 'epoch-1', generation: 2, hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length },
        });
        s.write({ chunk: { index: 0, data: body } });
      },
    },
    {
      name: 'a gzip payload that is not gzip',
      code: status.INVALID_ARGUMENT,
      errCode: /MESHRELAY_ERR_SNAPSHOT_UNDECODABLE/,
      send: (s) => {
        s.write({
          header: { epoch: 'epoch-1', generation: 2, hash: 'c'.repeat(64), totalChunks: 1, totalBytes: 5, encoding: 1 },
        });
        s.write({ chunk: { index: 0, data: Buffer.from('nope!') } });
      },
    },
  ];

for (const bad of badSnapshots) {
  test(`given a held snapshot, when a snapshot ${bad.name} arrives, then it is NACKed saying why, the previous snapshot stays and the stream stays up`, async (t) => {
    const { server, stream, hash } = await connected(t, ['--max-snapshot-bytes', '1048576']);
    bad.send(stream);
    const nack = await next(stream, (m) => m.ack ?? undefined);
    assert.equal(nack.accepted, false);
    assert.match(`${nack.errorCode}: ${nack.message}`, bad.errCode);
    assert.equal(ERROR_CATALOGUE[nack.errorCode as ErrorCode].grpc, bad.code);
    assert.equal((await server.store.getInput('a'))?.hash, hash);
    const newer = pushSnapshot(stream, 'a', 3, [service('after-the-refusal')]);
    const ack = await next(stream, (m) => m.ack ?? undefined);
    assert.deepEqual([ack.accepted, ack.hash], [true, newer], 'the same stream takes the next snapshot');
  });
}

test('given a held generation, when an older generation of the same epoch arrives, then it is NACKed as stale', async (t) => {
  const { server, client } = await connected(t);
  const stream = openPush(client);
  pushSnapshot(stream, 'a', 5, [service('y')]);
  await next(stream, (m) => m.ack ?? undefined);
  pushSnapshot(stream, 'a', 3, [service('z')]);
  const nack = await next(stream, (m) => m.ack ?? undefined);
  assert.deepEqual([nack.accepted, nack.errorCode], [false, 'MESHRELAY_ERR_SNAPSHOT_STALE']);
  assert.equal((await server.store.getInput('a'))?.generation, 5);
});

test('given a snapshot with an invalid resource, then the others are kept and the ack warns about the bad one', async (t) => {
  const { server, stream } = await connected(t);
  pushSnapshot(stream, 'a', 2, [
    service('good'),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'Bad_Name', namespace: 'default' }, spec: {} },
  ]);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.accepted, true);
  assert.equal(ack.warnings?.length, 1);
  assert.match(ack.warnings?.[0] ?? '', /Bad_Name/);
  assert.deepEqual(
    (await server.store.getInput('a'))?.resources.map((r) => r.metadata.name),
    ['good'],
  );
});

test('given a compressed multi-chunk snapshot, when pushed, then it is reassembled exactly', async (t) => {
  const { server, stream } = await connected(t);
  const many = Array.from({ length: 800 }, (_, i) => service(`svc-${i}`));
  const hash = pushSnapshot(stream, 'a', 2, many);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.hash, hash);
  assert.equal((await server.store.getInput('a'))?.resources.length, 800);
});

test('given an agent that goes silent, when the heartbeat timeout passes, then the server drops its stream', async (t) => {
  const { server, stream } = await connected(t);
  assert.equal(server.outputs !== undefined, true);
  const err: ServiceError = await streamError(stream, 5000);
  assert.equal(err.code, status.UNAVAILABLE);
  assert.match(err.details, /heartbeat timeout/);
});

test('given a connected agent, when it renews its certificate over mTLS, then the new certificate works', async (t) => {
  const { server, client } = await connected(t);
  const keys = generateKeyPair();
  const m = RELAY_SERVICE.renew;
  const res = await new Promise<relay.v1.IRenewResponse>((resolve, reject) =>
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      { csrPem: createCsr({ ...keys, cluster: 'a' }) },
      (err, r) => (err ? reject(err) : resolve(r as relay.v1.IRenewResponse)),
    ),
  );
  assert.equal(certificateInfo(res.certificatePem ?? '').subjectCN, 'a');
  const renewed = mtlsClient(t, server, { keyPem: keys.privateKeyPem, certPem: res.certificatePem ?? '' });
  const stream = openPush(renewed);
  pushSnapshot(stream, 'a', 2, [service('renewed')]);
  assert.equal((await next(stream, (m2) => m2.ack ?? undefined)).accepted, true);
  stream.end();
});

test('given an output for a cluster, when its agent pulls, then it gets the output once and again only when the hash changes', async (t) => {
  const { client, stream } = await connected(t);
  const pull = openPull(client);
  pull.write({ hello: { heldHash: '' } });
  const first = await next(pull, (m) => m.header ?? undefined);
  assert.match(first.hash ?? '', /^[0-9a-f]{64}$/);
  assert.deepEqual(
    first.provenance?.map((p: { cluster?: string | null }) => p.cluster),
    ['a'],
  );
  pull.write({ ack: { hash: first.hash, accepted: true } });
  pull.end();
  // A reconnecting agent that already holds the current output is sent nothing:
  // an input change that leaves the output unchanged sends nothing either, so the
  // first header it sees is the one a real output change produced.
  const again = openPull(client);
  again.write({ hello: { heldHash: first.hash } });
  const headers: string[] = [];
  again.on('data', (m: { header?: { hash?: string } | null }) => {
    if (m.header?.hash) headers.push(m.header.hash);
  });
  pushSnapshot(stream, 'a', 2, [service('x'), service('y')]);
  await next(stream, (m) => m.ack ?? undefined);
  pushSnapshot(stream, 'a', 3, [service('x'), service('y'), virtualDestination('x')]);
  await next(stream, (m) => m.ack ?? undefined);
  await waitFor(() => headers.length > 0, { timeoutMs: 5000, message: 'no output after a real change' });
  assert.equal(headers.length, 1);
  assert.notEqual(headers[0], first.hash);
  again.end();
  stream.end();
});
