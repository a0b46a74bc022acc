import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServerHandle } from '../src/index.ts';

async function serverFor(t: TestContext): Promise<RedisServerHandle> {
  const server = await startRedisServer();
  t.after(() => server.stop());
  return server;
}

/** A client that fails at once while the server is down. */
function clientFor(t: TestContext, url: string): Redis {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 20 });
  client.on('error', () => {});
  t.after(() => client.disconnect());
  return client;
}

async function connected(client: Redis): Promise<void> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
}

test('given a started server, when a client connects, then it answers on the announced url', async (t) => {
  const server = await serverFor(t);
  assert.equal(server.url, `redis://127.0.0.1:${server.port}`);
  const client = clientFor(t, server.url);
  await connected(client);
  assert.equal(await client.ping(), 'PONG');
  assert.deepEqual(await client.config('GET', 'save'), ['save', '']);
  assert.deepEqual(await client.config('GET', 'appendonly'), ['appendonly', 'no']);
});

test('given a running server, when killed, then clients lose it and restart brings it back empty on the same port', async (t) => {
  const server = await serverFor(t);
  const client = clientFor(t, server.url);
  await connected(client);
  await client.set('k', 'v');
  const port = server.port;

  await server.kill();
  await assert.rejects(client.ping());
  await server.restart();
  await connected(client);

  assert.equal(server.port, port);
  assert.equal(await client.get('k'), null);
});

test('given a running server, when restarted, then the data is gone', async (t) => {
  const server = await serverFor(t);
  const client = clientFor(t, server.url);
  await connected(client);
  await client.set('k', 'v');
  await server.restart();
  await connected(client);
  assert.equal(await client.get('k'), null);
});

test('given a stopped server, when stopped again, then nothing happens', async (t) => {
  const server = await serverFor(t);
  await server.stop();
  await server.stop();
  await server.kill();
});

test('given a busy port, when a server is started on it, then it rejects quoting redis output', async (t) => {
  const server = await serverFor(t);
  await assert.rejects(
    startRedisServer({ port: server.port, readyTimeoutMs: 5000 }),
    /exited[\s\S]*(Address already in use|bind)/i,
  );
});

test('given no redis-server on PATH, when started, then it says how to install it', async (t) => {
  const empty = await mkdtemp(join(tmpdir(), 'meshrelay-empty-path-'));
  t.after(() => rm(empty, { recursive: true, force: true }));
  const path = process.env.PATH;
  process.env.PATH = empty;
  try {
    await assert.rejects(startRedisServer(), /^Error: redis-server not found: apt-get install -y redis-server$/);
  } finally {
    process.env.PATH = path;
  }
});
