// clusterDomain ends up in every consuming cluster's VirtualService hosts, trustDomain in their
// AuthorizationPolicy principals: the HTTP API refuses anything that is not a DNS name before it
// reaches the registry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearer, startTestServer, type TestServer } from './harness.ts';

const EVIL = 'evil domain\n<b>x</b>';

async function send(
  server: TestServer,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const res = await fetch(`${server.api}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...bearer(server) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
}

for (const field of ['clusterDomain', 'trustDomain'] as const) {
  for (const [what, domain] of [
    ['markup and a newline', EVIL],
    ['a label over 63 characters', `${'a'.repeat(64)}.local`],
  ] as const) {
    test(`given ${what} as ${field}, when a cluster is registered over the API, then 400 names ${field} and nothing is registered`, async (t) => {
      const server = await startTestServer(t);
      const answer = await send(server, 'POST', '/api/v1/clusters', { name: 'east', [field]: domain });
      assert.equal(answer.status, 400);
      assert.equal(answer.body.code, 'MESHRELAY_ERR_INVALID_ARGUMENT');
      assert.match(answer.body.message ?? '', new RegExp(field));
      assert.equal(server.registry.get('east'), undefined);
    });
  }

  test(`given a registered cluster, when its ${field} is updated to markup over the API, then 400 names ${field} and the domain stays`, async (t) => {
    const server = await startTestServer(t);
    await server.registry.register('east', { [field]: 'east.local' });
    const answer = await send(server, 'PATCH', '/api/v1/clusters/east', { [field]: EVIL });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.code, 'MESHRELAY_ERR_INVALID_ARGUMENT');
    assert.match(answer.body.message ?? '', new RegExp(field));
    assert.equal(server.registry.get('east')?.spec[field], 'east.local');
  });
}

test('given a cluster registered over the API with a trustDomain, when it is read back and updated, then the view carries the trust domain', async (t) => {
  const server = await startTestServer(t);
  const registered = await send(server, 'POST', '/api/v1/clusters', { name: 'east', trustDomain: 'east.example' });
  assert.equal(registered.status, 201);
  assert.equal((registered.body as { cluster?: { trustDomain?: string } }).cluster?.trustDomain, 'east.example');
  const updated = await send(server, 'PATCH', '/api/v1/clusters/east', { trustDomain: 'east.example.org' });
  assert.equal(updated.status, 200);
  assert.equal((updated.body as { trustDomain?: string }).trustDomain, 'east.example.org');
  assert.equal(server.registry.get('east')?.spec.trustDomain, 'east.example.org');
});
