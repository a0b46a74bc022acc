// Who may use the HTTP API: every /api/v1 call needs the admin credential, Host and Origin are
// checked (DNS rebinding, cross-site forms), probes and static UI files stay open.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { bearer, startTestServer, type TestServer } from './harness.ts';

interface Answer {
  readonly status: number;
  readonly json: Record<string, unknown> | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** A raw HTTP request (fetch may not set Host), so the test controls every header. */
function send(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.httpPort,
        method,
        path,
        headers: { host: `127.0.0.1:${server.httpPort}`, ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let json: Record<string, unknown> | undefined;
          try {
            json = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, json, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_BODY = { 'content-type': 'application/json' };
const ROUTES: readonly (readonly [method: string, path: string, body?: string])[] = [
  ['GET', '/api/v1/status'],
  ['GET', '/api/v1/safe-mode'],
  ['GET', '/api/v1/outputs/held'],
  ['GET', '/api/v1/clusters'],
  ['GET', '/api/v1/clusters/east'],
  ['GET', '/api/v1/clusters/east/input'],
  ['GET', '/api/v1/clusters/east/output'],
  ['POST', '/api/v1/clusters', '{"name":"west"}'],
  ['PATCH', '/api/v1/clusters/east', '{"skipWarming":true}'],
  ['DELETE', '/api/v1/clusters/east'],
  ['POST', '/api/v1/clusters/east/token'],
  ['POST', '/api/v1/clusters/east/output/release'],
];

for (const [method, path, body] of ROUTES) {
  test(`given no admin token, when ${method} ${path}, then 401 MESHRELAY_ERR_UNAUTHENTICATED and nothing changes`, async (t) => {
    const server = await startTestServer(t);
    await server.registry.register('east', {});
    server.held.hold(
      {
        cluster: 'east',
        hash: 'c'.repeat(64),
        reason: 'delete-share',
        message: 'm',
        deleted: 5,
        held: 6,
        missingClusters: [],
      },
      new Date(),
    );
    const answer = await send(server, method, path, body === undefined ? {} : JSON_BODY, body);
    assert.equal(answer.status, 401);
    assert.equal(answer.json?.['code'], 'MESHRELAY_ERR_UNAUTHENTICATED');
    assert.equal(answer.headers['www-authenticate'], 'Bearer realm="meshrelay"');
    assert.equal(answer.json?.['token'], undefined);
    assert.deepEqual(
      server.registry.list().map((c) => [c.metadata.name, c.spec.skipWarming]),
      [['east', false]],
    );
    assert.ok(server.held.get('east'), 'the held output was released');
  });
}

test('given a wrong admin token (same length, other length, not bearer), when calling the API, then each is 401', async (t) => {
  const server = await startTestServer(t);
  const right = server.admin.token;
  const wrongs = [
    `Bearer ${right.slice(0, -1)}${right.endsWith('A') ? 'B' : 'A'}`,
    `Bearer ${right}x`,
    'Bearer x',
    `Basic ${right}`,
    right,
  ];
  for (const authorization of wrongs) {
    const answer = await send(server, 'GET', '/api/v1/clusters', { authorization });
    assert.equal(answer.status, 401, authorization);
    assert.equal(answer.json?.['code'], 'MESHRELAY_ERR_UNAUTHENTICATED');
  }
  assert.equal((await send(server, 'GET', '/api/v1/clusters', bearer(server))).status, 200);
});

test('given no admin token, when the API, probes, metrics and the UI files are fetched, then only the API is refused', async (t) => {
  const server = await startTestServer(t);
  assert.equal((await send(server, 'GET', '/api/v1/clusters')).status, 401);
  for (const path of ['/healthz', '/readyz', '/', '/ui/app.js', '/ui/style.css']) {
    assert.equal((await send(server, 'GET', path)).status, 200, path);
  }
  const metrics = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  assert.equal(metrics.status, 200);
});

test('given a Host the server does not answer to, when the API or UI is called with or without the token, then 403 and nothing is registered', async (t) => {
  const server = await startTestServer(t);
  const rebound = { host: `attacker.example:${server.httpPort}` };
  for (const headers of [rebound, { ...rebound, ...bearer(server) }]) {
    const post = await send(server, 'POST', '/api/v1/clusters', { ...headers, ...JSON_BODY }, '{"name":"east"}');
    assert.equal(post.status, 403);
    assert.equal(post.json?.['code'], 'MESHRELAY_ERR_PERMISSION_DENIED');
    assert.match(String(post.json?.['message']), /attacker\.example/);
    assert.equal((await send(server, 'GET', '/api/v1/clusters', headers)).status, 403);
    assert.equal((await send(server, 'GET', '/', headers)).status, 403);
  }
  assert.equal(server.registry.list().length, 0);
  // Probes address the pod by IP: they stay open.
  assert.equal((await send(server, 'GET', '/healthz', rebound)).status, 200);
});

test('given --http-allowed-hosts, when a request names that host, then it is answered', async (t) => {
  const server = await startTestServer(t, ['--http-allowed-hosts', 'Mgmt.Example.org, other.example']);
  const answer = await send(server, 'GET', '/api/v1/clusters', {
    host: `mgmt.example.org:${server.httpPort}`,
    ...bearer(server),
  });
  assert.equal(answer.status, 200);
  assert.equal((await send(server, 'GET', '/api/v1/clusters', { host: 'localhost', ...bearer(server) })).status, 200);
  assert.equal((await send(server, 'GET', '/api/v1/clusters', { host: '[::1]:1', ...bearer(server) })).status, 200);
});

test('given a cross-site HTML form POST, when it reaches the API with or without the token, then it is refused and nothing is registered', async (t) => {
  const server = await startTestServer(t);
  const form = { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://attacker.example' };
  await server.registry.register('west', {});
  for (const headers of [form, { ...form, ...bearer(server) }]) {
    const answer = await send(server, 'POST', '/api/v1/clusters', headers, 'name=east');
    assert.equal(answer.status, 403);
    assert.equal(answer.json?.['code'], 'MESHRELAY_ERR_PERMISSION_DENIED');
    // A form without fields: an empty body, as a token rotation needs.
    const rotate = await send(server, 'POST', '/api/v1/clusters/west/token', { ...headers, 'content-length': '0' });
    assert.equal(rotate.status, 403);
    assert.equal(rotate.json?.['token'], undefined);
  }
  assert.deepEqual(
    server.registry.list().map((c) => c.metadata.name),
    ['west'],
  );
});

test('given a foreign Origin, when a read or a JSON call carries the token, then it is refused', async (t) => {
  const server = await startTestServer(t);
  for (const origin of ['http://attacker.example', 'null', `http://localhost:${server.httpPort + 1}`]) {
    const answer = await send(
      server,
      'POST',
      '/api/v1/clusters',
      { origin, ...bearer(server), ...JSON_BODY },
      '{"name":"east"}',
    );
    assert.equal(answer.status, 403, origin);
    assert.equal((await send(server, 'GET', '/api/v1/clusters', { origin, ...bearer(server) })).status, 403, origin);
  }
  assert.equal(server.registry.list().length, 0);
});

test("given the server's own Origin, when a JSON call carries the token, then it is answered", async (t) => {
  const server = await startTestServer(t);
  const origin = `http://127.0.0.1:${server.httpPort}`;
  const answer = await send(
    server,
    'POST',
    '/api/v1/clusters',
    { origin, ...bearer(server), ...JSON_BODY },
    '{"name":"east"}',
  );
  assert.equal(answer.status, 201);
});

test('given a same-origin mutating call with a form or text body, when it carries the token, then it is refused: changes need JSON', async (t) => {
  const server = await startTestServer(t);
  for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
    const answer = await send(
      server,
      'POST',
      '/api/v1/clusters',
      { 'content-type': type, ...bearer(server) },
      'name=east',
    );
    assert.equal(answer.status, 400, type);
    assert.equal(answer.json?.['code'], 'MESHRELAY_ERR_INVALID_ARGUMENT');
    assert.match(String(answer.json?.['message']), /application\/json/);
  }
  const untyped = await send(server, 'POST', '/api/v1/clusters', bearer(server), '{"name":"east"}');
  assert.equal(untyped.status, 400);
  assert.equal(server.registry.list().length, 0);
  // A call without a body needs no type.
  await server.registry.register('east', {});
  assert.equal((await send(server, 'POST', '/api/v1/clusters/east/token', bearer(server))).status, 200);
});

test('given --metrics-host apart from --http-host, when the server starts, then /metrics is served on its own address only', async (t) => {
  const server = await startTestServer(t, ['--metrics-host', '127.0.0.2']);
  assert.equal((await fetch(`http://127.0.0.2:${server.metricsPort}/metrics`)).status, 200);
  await assert.rejects(fetch(`http://127.0.0.1:${server.metricsPort}/metrics`), /fetch failed/);
});
