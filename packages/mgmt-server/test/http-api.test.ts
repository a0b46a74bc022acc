import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bearer,
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  register,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';

/** One API call, with the admin credential unless `headers` says otherwise. */
async function call(
  server: TestServer,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = bearer(server),
) {
  const res = await fetch(`${server.api}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

test('given a new cluster, when registered over the API, then the token, relay address and CA come back once', async (t) => {
  const server = await startTestServer(t);
  const res = await call(server, 'POST', '/api/v1/clusters', JSON.stringify({ name: 'east' }));
  assert.equal(res.status, 201);
  const body = res.json as {
    token: string;
    relay: { address: string; caBundlePem: string };
    cluster: { warm: { status: string; reason: string } };
  };
  assert.match(body.token, /^mrt_[A-Za-z0-9_-]{43}$/);
  assert.equal(body.relay.address, `localhost:${server.relayPort}`);
  assert.match(body.relay.caBundlePem, /BEGIN CERTIFICATE/);
  assert.deepEqual(body.cluster.warm, { ...body.cluster.warm, status: 'False', reason: 'ClusterRegistered' });
  // The token is stored only as a hash, and it works for registration.
  const identity = await register(server, 'east', body.token);
  assert.match(identity.certPem, /BEGIN CERTIFICATE/);
  const list = await call(server, 'GET', '/api/v1/clusters');
  assert.deepEqual(
    (list.json?.['clusters'] as { name: string }[]).map((c) => c.name),
    ['east'],
  );
});

const badBodies: { name: string; body: string; status: number; code: string }[] = [
  { name: 'malformed JSON', body: '{"name":', status: 400, code: 'MESHRELAY_ERR_INVALID_ARGUMENT' },
  { name: 'a missing name', body: '{}', status: 400, code: 'MESHRELAY_ERR_INVALID_ARGUMENT' },
  { name: 'an unknown field', body: '{"name":"x","color":"red"}', status: 400, code: 'MESHRELAY_ERR_INVALID_ARGUMENT' },
  {
    name: 'a wrong type',
    body: '{"name":"x","skipWarming":"yes"}',
    status: 400,
    code: 'MESHRELAY_ERR_INVALID_ARGUMENT',
  },
  {
    name: 'an invalid cluster name',
    body: '{"name":"Not_A_Name"}',
    status: 400,
    code: 'MESHRELAY_ERR_INVALID_ARGUMENT',
  },
];

for (const bad of badBodies) {
  test(`given ${bad.name}, when registering, then 400 with a JSON error and nothing is registered`, async (t) => {
    const server = await startTestServer(t);
    const res = await call(server, 'POST', '/api/v1/clusters', bad.body);
    assert.equal(res.status, bad.status);
    assert.equal(res.json?.['code'], bad.code);
    assert.equal(typeof res.json?.['message'], 'string');
    assert.equal(server.registry.list().length, 0);
  });
}

test('given a registered cluster, when registered again, then 409 and the first registration stays', async (t) => {
  const server = await startTestServer(t);
  await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}');
  const uid = server.registry.get('a')?.metadata.uid;
  const again = await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}');
  assert.equal(again.status, 409);
  assert.equal(again.json?.['code'], 'MESHRELAY_ERR_CLUSTER_EXISTS');
  assert.equal(server.registry.get('a')?.metadata.uid, uid);
});

test('unknown clusters and snapshots give 404 with a code', async (t) => {
  const server = await startTestServer(t);
  assert.equal((await call(server, 'GET', '/api/v1/clusters/nope')).json?.['code'], 'MESHRELAY_ERR_CLUSTER_NOT_FOUND');
  assert.equal((await call(server, 'DELETE', '/api/v1/clusters/nope')).status, 404);
  await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}');
  const input = await call(server, 'GET', '/api/v1/clusters/a/input');
  assert.equal(input.status, 404);
  assert.equal(input.json?.['code'], 'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND');
});

test('given a pushed snapshot, then the input endpoint, cluster view and metrics show it', async (t) => {
  const server = await startTestServer(t);
  const reg = await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}');
  const identity = await register(server, 'a', (reg.json as { token: string }).token);
  const stream = openPush(mtlsClient(t, server, identity));
  const hash = pushSnapshot(stream, 'a', 1, [service('x')]);
  await next(stream, (m) => m.ack ?? undefined);
  const input = await call(server, 'GET', '/api/v1/clusters/a/input');
  assert.equal(input.json?.['hash'], hash);
  const view = (await call(server, 'GET', '/api/v1/clusters/a')).json as {
    warm: { status: string };
    connection: { connected: boolean; push: number };
    input: { hash: string; stale: boolean };
  };
  assert.equal(view.warm.status, 'True');
  assert.equal(view.connection.push, 1);
  assert.equal(view.input.hash, hash);
  assert.equal(view.input.stale, false);
  const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  assert.match(metrics, /relay_push_clients_connected\{cluster="a",pod="test-0"\} 1/);
  assert.match(metrics, /meshrelay_input_snapshot_bytes\{cluster="a",pod="test-0"\} \d+/);
  assert.match(metrics, /meshrelay_input_snapshot_age_seconds\{cluster="a",pod="test-0"\}/);
  assert.match(metrics, /meshrelay_translation_duration_seconds_count\{pod="test-0"\} [1-9]/);
  assert.match(metrics, /meshrelay_redis_up\{pod="test-0"\} 0/);
  stream.end();
});

test('given an admin token given by flag, when calls carry it or not, then only calls with it are answered', async (t) => {
  const server = await startTestServer(t, ['--admin-token', 's3cret-s3cret-s3cret']);
  const denied = await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}', {});
  assert.equal(denied.status, 401);
  assert.equal(denied.json?.['code'], 'MESHRELAY_ERR_UNAUTHENTICATED');
  const ok = await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}', {
    authorization: 'Bearer s3cret-s3cret-s3cret',
  });
  assert.equal(ok.status, 201);
  assert.equal((await call(server, 'GET', '/api/v1/clusters', undefined, {})).status, 401);
  assert.equal(
    (await call(server, 'GET', '/api/v1/clusters', undefined, { authorization: 'Bearer s3cret-s3cret-s3cret' })).status,
    200,
  );
});

test('given a registered cluster, when updated with skipWarming and deregistered, then both take effect', async (t) => {
  const server = await startTestServer(t);
  await call(server, 'POST', '/api/v1/clusters', '{"name":"a"}');
  const updated = await call(server, 'PATCH', '/api/v1/clusters/a', '{"skipWarming":true}');
  assert.equal(updated.json?.['skipWarming'], true);
  assert.equal(server.registry.get('a')?.spec.skipWarming, true);
  assert.equal((await call(server, 'DELETE', '/api/v1/clusters/a')).status, 204);
  assert.equal(server.registry.get('a'), undefined);
  assert.equal((await call(server, 'GET', '/healthz')).status, 200);
  assert.equal((await call(server, 'GET', '/readyz')).status, 200);
});
