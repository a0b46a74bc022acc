import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshctlAt, startServer } from './harness.ts';

interface ListAnswer {
  clusters: { name: string; skipWarming: boolean; warm: { status: string } }[];
}

async function listJson(url: string): Promise<ListAnswer> {
  const result = await meshctlAt(url, ['cluster', 'list', '--output', 'json']);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as ListAnswer;
}

test('given no clusters, when clusters are listed as text, then meshctl says so', async (t) => {
  const { url } = await startServer(t);

  const result = await meshctlAt(url, ['cluster', 'list']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'No clusters are registered.\n');
});

test('given two clusters, when listed with -o json, then both are in the raw answer', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'west']);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const answer = await listJson(url);

  assert.deepEqual(answer.clusters.map((c) => c.name).sort(), ['east', 'west']);
  assert.ok(answer.clusters.every((c) => c.warm.status === 'False'));
});

test('given a registered cluster, when it is deregistered, then the list no longer has it', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);
  await meshctlAt(url, ['cluster', 'register', 'west']);

  const result = await meshctlAt(url, ['cluster', 'deregister', 'east']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'Cluster "east" deregistered.\n');
  assert.deepEqual(
    (await listJson(url)).clusters.map((c) => c.name),
    ['west'],
  );
});

test('given an unknown cluster, when it is deregistered, then meshctl exits 1 with MESHRELAY_ERR_CLUSTER_NOT_FOUND', async (t) => {
  const { url } = await startServer(t);

  const result = await meshctlAt(url, ['cluster', 'deregister', 'ghost']);

  assert.equal(result.code, 1);
  assert.match(result.stderr, /^meshctl: MESHRELAY_ERR_CLUSTER_NOT_FOUND: .*ghost.*\n$/);
});

test('given a cluster, when updated with --skip-warming, then the list shows SKIP-WARMING True', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['cluster', 'update', 'east', '--skip-warming']);

  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /skip-warming true/);
  const list = await meshctlAt(url, ['cluster', 'list']);
  assert.match(list.stdout, /^east\s+False\s+False\s+-\s+-\s+-\s+True$/m);
});

test('given a cluster skipping warming, when updated with --skip-warming=false or --no-skip-warming, then it waits for warming again', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east', '--skip-warming']);
  await meshctlAt(url, ['cluster', 'register', 'west', '--skip-warming']);

  const byValue = await meshctlAt(url, ['cluster', 'update', 'east', '--skip-warming=false']);
  const byNegation = await meshctlAt(url, ['cluster', 'update', 'west', '--no-skip-warming']);

  assert.equal(byValue.code, 0, byValue.stderr);
  assert.equal(byNegation.code, 0, byNegation.stderr);
  assert.deepEqual((await listJson(url)).clusters.map((c) => [c.name, c.skipWarming]).sort(), [
    ['east', false],
    ['west', false],
  ]);
});

test('given a cluster registered with --trust-domain, when it is updated with another --trust-domain, then the server holds the new one', async (t) => {
  const { server, url } = await startServer(t);
  const registered = await meshctlAt(url, ['cluster', 'register', 'east', '--trust-domain', 'east.example']);
  assert.equal(registered.code, 0, registered.stderr);
  assert.equal(server.registry.get('east')?.spec.trustDomain, 'east.example');

  const result = await meshctlAt(url, ['cluster', 'update', 'east', '--trust-domain', 'east.example.org']);

  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /trust domain east\.example\.org/);
  assert.equal(server.registry.get('east')?.spec.trustDomain, 'east.example.org');
});

test('given a cluster, when update is given nothing to change, then meshctl exits 2', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);

  const result = await meshctlAt(url, ['cluster', 'update', 'east']);

  assert.equal(result.code, 2);
  assert.match(result.stderr, /^meshctl: nothing to update: .*\n$/);
});
