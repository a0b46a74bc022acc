// Relay core end to end: real redis-server, one meshrelay-server process, two
// meshrelay-agent processes on copies of examples/cluster-a and examples/cluster-b.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { waitFor } from '@meshrelay/testkit';
import { tunedAllocatorEnvironment } from '../packages/mgmt-server/src/runtime.ts';
import { Mesh, hasResource, virtualDestinationYaml } from './mesh.ts';

interface Status {
  store: { backend: string; redisUp: boolean; pendingWriteBack: number };
}

async function twoClusterMesh(t: Parameters<typeof Mesh.start>[0]): Promise<Mesh> {
  const mesh = await Mesh.start(t);
  await mesh.startServer();
  await mesh.register('cluster-a');
  await mesh.register('cluster-b');
  await mesh.startAgent('cluster-a', { from: 'cluster-a' });
  await mesh.startAgent('cluster-b', { from: 'cluster-b' });
  // Both agents have applied a first output built from both clusters' inputs.
  for (const cluster of ['cluster-a', 'cluster-b']) {
    await mesh.waitForOutput(cluster, (o) => o.provenance.length === 2, 30_000, `first output of ${cluster}`);
  }
  return mesh;
}

test("given two clusters, when cluster-a adds a VirtualDestination, then it reaches cluster-b's output directory", async (t) => {
  const mesh = await twoClusterMesh(t);
  const before = mesh.readOutput('cluster-b');
  mesh.writeManifest('cluster-a', 'vd-ratings.yaml', virtualDestinationYaml('ratings', 'ratings.global'));
  const after = await mesh.waitForOutput('cluster-b', (o) => hasResource(o, 'ServiceEntry', 'ratings'));
  assert.notEqual(after.hash, before?.hash);
  // Provenance names both clusters' current inputs, as the server holds them.
  const inputA = await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-a/input');
  const inputB = await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-b/input');
  assert.deepEqual(
    after.provenance.map((p) => ({ cluster: p.cluster, inputHash: p.inputHash })),
    [
      { cluster: 'cluster-a', inputHash: inputA.hash },
      { cluster: 'cluster-b', inputHash: inputB.hash },
    ],
  );
  // The output the server holds is byte-for-byte what the agent applied.
  const served = await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-b/output');
  assert.equal(served.hash, after.hash);
});

test('given Redis is killed, when cluster-a changes, then the change still reaches cluster-b, and when Redis returns memory is written back', async (t) => {
  const mesh = await twoClusterMesh(t);
  const redis = mesh.redis;
  assert.ok(redis);
  await redis.kill();
  await waitFor(async () => !(await mesh.api<Status>('/api/v1/status')).store.redisUp, {
    timeoutMs: 10_000,
    message: 'server did not notice Redis going down',
  });

  mesh.writeManifest('cluster-a', 'vd-details.yaml', virtualDestinationYaml('details', 'details.global'));
  const out = await mesh.waitForOutput('cluster-b', (o) => hasResource(o, 'ServiceEntry', 'details'));
  const status = await mesh.api<Status>('/api/v1/status');
  assert.equal(status.store.redisUp, false);
  assert.ok(status.store.pendingWriteBack > 0, 'the new input waits for write-back');
  const server = mesh.servers[0];
  assert.ok(server);
  assert.match(await mesh.metrics(server), /meshrelay_redis_up\{pod="mgmt-0"\} 0/);
  // Built from the inputs held in memory: both clusters, at the hashes the server holds.
  for (const p of out.provenance) {
    assert.equal(p.inputHash, (await mesh.api<{ hash: string }>(`/api/v1/clusters/${p.cluster}/input`)).hash);
  }
  assert.deepEqual(
    out.provenance.map((p) => p.cluster),
    ['cluster-a', 'cluster-b'],
  );

  await redis.restart();
  const heldA = await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-a/input');
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  t.after(() => client.disconnect());
  await client.connect();
  await waitFor(async () => (await client.hget('meshrelay:input-parts:cluster-a', '#hash')) === heldA.hash, {
    timeoutMs: 20_000,
    message: "cluster-a's input was not written back to Redis",
  });
  await waitFor(async () => (await mesh.api<Status>('/api/v1/status')).store.pendingWriteBack === 0, {
    timeoutMs: 10_000,
    message: 'write-back did not finish',
  });
  assert.match(await mesh.metrics(server), /meshrelay_redis_up\{pod="mgmt-0"\} 1/);
  assert.equal(await client.exists('meshrelay:input-parts:cluster-b'), 1);
});

test('given an invalid manifest in cluster-a, then the other resources still go up and the agent names the file and field', async (t) => {
  const mesh = await twoClusterMesh(t);
  mesh.writeManifest(
    'cluster-a',
    'broken.yaml',
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\n  namespace: default\nspec:\n  ports:\n    - port: 99999\n',
  );
  mesh.writeManifest('cluster-a', 'vd-reviews2.yaml', virtualDestinationYaml('reviews2', 'reviews2.global'));
  await mesh.waitForOutput('cluster-b', (o) => hasResource(o, 'ServiceEntry', 'reviews2'));
  const agent = mesh.agents.get('cluster-a');
  const line = await agent?.proc.waitForLine(
    (l) => l.includes('broken.yaml') && l.includes('spec.ports[0].port'),
    10_000,
  );
  assert.ok(line);
});

test('given the server binary on Linux, then the process it started runs with the fixed glibc mmap threshold', async (t) => {
  const mesh = await Mesh.start(t);
  const server = await mesh.startServer();
  const environ = readFileSync(`/proc/${server.proc.pid}/environ`, 'utf8').split('\0');
  const tunables = environ.find((entry) => entry.startsWith('GLIBC_TUNABLES='))?.slice('GLIBC_TUNABLES='.length);
  // The spawned process itself (same id) carries it: the binary started itself again with it.
  const expected = tunedAllocatorEnvironment(process.env, 'linux')?.['GLIBC_TUNABLES'] ?? process.env['GLIBC_TUNABLES'];
  assert.equal(tunables, expected);
  assert.match(tunables ?? '', /glibc\.malloc\.mmap_threshold=\d+/);
});
