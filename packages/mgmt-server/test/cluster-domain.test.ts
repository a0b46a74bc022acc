// clusterDomain ends up in every consuming cluster's VirtualService hosts: the HTTP API refuses
// anything that is not a DNS name before it reaches the registry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearer, startTestServer, type TestServer } from './harness.ts';

const EVIL = 'evil domain\n<b>x</b>';

async function send(server: TestServer, method: string, path: string, body: unknown): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const res = await fetch(`${server.api}${path}`, {
    method, headers: { 'content-type': 'application/json', ...bearer(server) }, body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
}

for (const [what, domain] of [['markup and a newline', EVIL], ['a label over 63 characters', `${'a'.repeat(64)}.local`]] as const) {
  test(`given ${what} as clusterDomain, when a cluster is registered over the API, then 400 names clusterDomain and nothing is registered`, async (t) => {
    const server = await startTestServer(t);
    const answer = await send(server, 'POST', '/api/v1/clusters', { name: 'east', clusterDomain: domain });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.code, 'MESHRELAY_ERR_INVALID_ARGUMENT');
    assert.match(answer.body.message ?? '', /clusterDomain/);
    assert.equal(server.registry.get('east'), undefined);
  });
}

test('given a registered cluster, when its clusterDomain is updated to markup over the API, then 400 names clusterDomain and the domain stays', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', { clusterDomain: 'east.local' });
  const answer = await send(server, 'PATCH', '/api/v1/clusters/east', { clusterDomain: EVIL });
  assert.equal(answer.status, 400);
  assert.equal(answer.body.code, 'MESHRELAY_ERR_INVALID_ARGUMENT');
  assert.match(answer.body.message ?? '', /clusterDomain/);
  assert.equal(server.registry.get('east')?.spec.clusterDomain, 'east.local');
});
