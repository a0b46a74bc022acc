import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { buildGloo, statusFixture, waitFor } from '@meshrelay/testkit';
import {
  bearer,
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  registerCluster,
  startTestServer,
  type TestServer,
} from './harness.ts';

interface Listed {
  kind: string;
  name: string;
  namespace: string;
  cluster: string;
  approval: string;
  message: string;
  outputs: { cluster: string; kind: string; name: string }[];
}

async function get(server: TestServer, query: string, headers: Record<string, string> = bearer(server)) {
  const res = await fetch(`${server.api}/api/v1/resources${query}`, { headers });
  return { status: res.status, json: (await res.json()) as { resources?: Listed[]; code?: string; message?: string } };
}

/** A server whose cluster-a pushed statusFixture(), once both Gloo resources have a status. */
async function serverWithFixture(t: TestContext): Promise<TestServer> {
  const server = await startTestServer(t);
  const identity = await registerCluster(server, 'cluster-a');
  const stream = openPush(mtlsClient(t, server, identity));
  t.after(() => stream.end());
  pushSnapshot(stream, 'cluster-a', 1, statusFixture());
  await next(stream, (m) => m.ack ?? undefined);
  await waitFor(async () => ((await get(server, '')).json.resources ?? []).length === 2, {
    timeoutMs: 10_000,
    message: 'two resource statuses',
  });
  return server;
}

test('given a pushed config with a good RouteTable and an AccessPolicy using an unsupported security field, when resources are listed, then one is ACCEPTED with its outputs and one INVALID with the field named', async (t) => {
  const server = await serverWithFixture(t);
  const { status, json } = await get(server, '');
  assert.equal(status, 200);
  const byKind = new Map((json.resources ?? []).map((r) => [r.kind, r]));
  const route = byKind.get('RouteTable');
  assert.equal(route?.approval, 'ACCEPTED');
  assert.equal(route?.cluster, 'cluster-a');
  assert.deepEqual(
    route?.outputs.map((o) => `${o.cluster} ${o.kind}`),
    ['cluster-a VirtualService'],
  );
  const policy = byKind.get('AccessPolicy');
  assert.equal(policy?.approval, 'INVALID');
  assert.equal(policy?.name, 'reviews-lockdown');
  assert.match(policy?.message ?? '', /enforcementLayers/);
});

test('given listed resources, when filtered by kind (any case, plural), approval, cluster, name and namespace, then only matching ones come back', async (t) => {
  const server = await serverWithFixture(t);
  const names = async (query: string) => ((await get(server, query)).json.resources ?? []).map((r) => r.name);
  assert.deepEqual(await names('?kind=accesspolicies'), ['reviews-lockdown']);
  assert.deepEqual(await names('?kind=RouteTable'), ['reviews-route']);
  assert.deepEqual(await names('?approval=INVALID'), ['reviews-lockdown']);
  assert.deepEqual(await names('?cluster=cluster-b'), []);
  assert.deepEqual(await names('?namespace=bookinfo&name=reviews-route'), ['reviews-route']);
});

test('given a Gloo resource whose spec fails its schema (as an agent carries it up from intake), when resources are listed, then it is INVALID naming the field', async (t) => {
  const server = await startTestServer(t);
  const stream = openPush(mtlsClient(t, server, await registerCluster(server, 'cluster-a')));
  t.after(() => stream.end());
  const broken = buildGloo('RouteTable', {
    name: 'typo',
    namespace: 'bookinfo',
    spec: { hosts: ['typo.example.com'], htpp: [] },
  });
  pushSnapshot(stream, 'cluster-a', 1, [broken]);
  await next(stream, (m) => m.ack ?? undefined);
  let listed: Listed[] = [];
  await waitFor(
    async () => (listed = (await get(server, '?approval=INVALID&kind=routetables')).json.resources ?? []).length === 1,
    { message: 'the broken RouteTable listed' },
  );
  assert.equal(listed[0]?.name, 'typo');
  assert.match(listed[0]?.message ?? '', /htpp/);
});

const badQueries: { name: string; query: string; names: RegExp }[] = [
  {
    name: 'an approval that is not a Gloo state',
    query: '?approval=BROKEN',
    names: /approval "BROKEN" is not one of ACCEPTED, WARNING, INVALID, FAILED/,
  },
  { name: 'a kind that is not a Gloo kind', query: '?kind=pods', names: /kind "pods" is not a Gloo kind/ },
  { name: 'an unknown parameter', query: '?colour=red', names: /unknown query parameter "colour"/ },
];

for (const bad of badQueries) {
  test(`given ${bad.name}, when resources are listed, then 400 MESHRELAY_ERR_INVALID_ARGUMENT naming it`, async (t) => {
    const server = await startTestServer(t);
    const { status, json } = await get(server, bad.query);
    assert.equal(status, 400);
    assert.equal(json.code, 'MESHRELAY_ERR_INVALID_ARGUMENT');
    assert.match(json.message ?? '', bad.names);
  });
}

test('given no admin credential, when resources are listed, then 401', async (t) => {
  const server = await startTestServer(t);
  const { status, json } = await get(server, '', {});
  assert.equal(status, 401);
  assert.equal(json.code, 'MESHRELAY_ERR_UNAUTHENTICATED');
});
