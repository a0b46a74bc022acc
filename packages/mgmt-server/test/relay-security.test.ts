import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metadata, status } from '@grpc/grpc-js';
import { createTestPki } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  register,
  registerCluster,
  service,
  startTestServer,
  streamError,
  tlsOnlyClient,
} from './harness.ts';

test('given no client certificate, when an agent opens Push, then it is refused UNAUTHENTICATED', async (t) => {
  const server = await startTestServer(t);
  const stream = openPush(tlsOnlyClient(t, server));
  const err = await streamError(stream);
  assert.equal(err.code, status.UNAUTHENTICATED);
  assert.match(err.details, /MESHRELAY_ERR_UNAUTHENTICATED/);
});

test('given a client certificate from a foreign CA, when it pushes, then it is refused', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('a', {});
  const foreign = createTestPki({ clusters: ['a'] }).foreignClientCert;
  const stream = openPush(mtlsClient(t, server, { keyPem: foreign.keyPem, certPem: foreign.certPem }));
  const err = await streamError(stream);
  assert.ok(err.code === status.UNAUTHENTICATED || err.code === status.UNAVAILABLE, `got ${err.code} ${err.details}`);
  assert.equal(server.store.memoryInputs().size, 0);
});

test('given a wrong token, when registering, then UNAUTHENTICATED, and repeated failures are rate limited', async (t) => {
  const server = await startTestServer(t, ['--registration-max-failures', '3']);
  const { token } = await server.registry.register('a', {});
  for (let i = 0; i < 3; i++) {
    await assert.rejects(
      register(server, 'a', `${token}x`),
      (e: { code: number; details: string }) =>
        e.code === status.UNAUTHENTICATED && /MESHRELAY_ERR_TOKEN_INVALID/.test(e.details),
    );
  }
  // Past the limit this source is refused even with the right token until the window passes.
  await assert.rejects(
    register(server, 'a', token),
    (e: { code: number; details: string }) =>
      e.code === status.RESOURCE_EXHAUSTED && /MESHRELAY_ERR_RATE_LIMITED/.test(e.details),
  );
});

test('given a token of cluster a, when registering as cluster b, then it is refused', async (t) => {
  const server = await startTestServer(t);
  const { token } = await server.registry.register('a', {});
  await server.registry.register('b', {});
  await assert.rejects(register(server, 'b', token), (e: { code: number }) => e.code === status.UNAUTHENTICATED);
});

test('given a CSR naming another cluster, when registering, then it is refused', async (t) => {
  const server = await startTestServer(t);
  const { token } = await server.registry.register('a', {});
  await assert.rejects(
    register(server, 'a', token, 'b'),
    (e: { code: number; details: string }) =>
      e.code === status.INVALID_ARGUMENT && /MESHRELAY_ERR_CERTIFICATE/.test(e.details),
  );
});

test('given a certificate for a, when the call claims to push as b, then PERMISSION_DENIED and b is untouched', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  await server.registry.register('b', {});
  const metadata = new Metadata();
  metadata.set('meshrelay-cluster', 'b');
  const stream = openPush(mtlsClient(t, server, a), metadata);
  pushSnapshot(stream, 'b', 1, [service('x')]);
  const err = await streamError(stream);
  assert.equal(err.code, status.PERMISSION_DENIED);
  assert.equal(await server.store.getInput('b'), undefined);
});

test('given a certificate for a, when it pushes, then the snapshot is stored under a only', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  await server.registry.register('b', {});
  const stream = openPush(mtlsClient(t, server, a));
  const hash = pushSnapshot(stream, 'b', 1, [service('x')]);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.accepted, true);
  assert.equal((await server.store.getInput('a'))?.hash, hash);
  assert.equal(await server.store.getInput('b'), undefined);
  stream.end();
});

test('given a connected cluster, when it is deregistered, then its stream ends and its certificate stops working', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const client = mtlsClient(t, server, a);
  const stream = openPush(client);
  pushSnapshot(stream, 'a', 1, [service('x')]);
  await next(stream, (m) => m.ack ?? undefined);
  const ended = streamError(stream);
  await server.registry.deregister('a');
  assert.equal((await ended).code, status.UNAUTHENTICATED);
  const again = await streamError(openPush(client));
  assert.equal(again.code, status.UNAUTHENTICATED);
  assert.match(again.details, /not registered/);
});

test('given a cluster re-registered under the same name, when the old certificate is used, then it is refused', async (t) => {
  const server = await startTestServer(t);
  const old = await registerCluster(server, 'a');
  await server.registry.deregister('a');
  await server.registry.register('a', {});
  const err = await streamError(openPush(mtlsClient(t, server, old)));
  assert.equal(err.code, status.UNAUTHENTICATED);
  assert.match(err.details, /earlier registration/);
});

test('given an agent pushing for a, when a second agent with the same identity connects, then the first is fenced off', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const first = openPush(mtlsClient(t, server, a));
  pushSnapshot(first, 'a', 1, [service('x')]);
  await next(first, (m) => m.ack ?? undefined);
  const fenced = streamError(first);
  const second = openPush(mtlsClient(t, server, a));
  pushSnapshot(second, 'a', 1, [service('y')], 'epoch-2');
  await next(second, (m) => m.ack ?? undefined);
  const err = await fenced;
  assert.equal(err.code, status.ABORTED);
  assert.match(err.details, /MESHRELAY_ERR_FENCED/);
  second.end();
});
