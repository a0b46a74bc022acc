import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { meshctlAt, startServer, tempDir, tokenFrom } from './harness.ts';

test('given a server, when a cluster is registered, then the token, the CA bundle and the agent command line are printed and the token is accepted', async (t) => {
  const { server, url } = await startServer(t);

  const result = await meshctlAt(url, ['cluster', 'register', 'east']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  const token = tokenFrom(result.stdout);
  const verified = await server.registry.verifyToken('east', token);
  assert.equal(verified.metadata.name, 'east');
  assert.ok(result.stdout.includes(server.ca.certPem.trimEnd()), 'the root CA bundle is printed');
  assert.match(result.stdout, new RegExp(`^Relay server address:\\s+localhost:${server.relayPort}$`, 'm'));
  assert.ok(
    result.stdout.includes(
      `npx meshrelay-agent --cluster east --server-address localhost:${server.relayPort} --token-file <token-file> --root-ca-file <root-ca-file> --manifests-dir <manifests-dir> --output-dir <output-dir> --state-dir <state-dir>`,
    ),
    result.stdout,
  );
});

test('given a registered cluster, when clusters are listed, then it shows WARM False and its token appears nowhere', async (t) => {
  const { url } = await startServer(t);
  const token = tokenFrom((await meshctlAt(url, ['cluster', 'register', 'east'])).stdout);

  const text = await meshctlAt(url, ['cluster', 'list']);
  const json = await meshctlAt(url, ['cluster', 'list', '-o', 'json']);

  assert.equal(text.code, 0, text.stderr);
  const [header, row, ...rest] = text.stdout.trimEnd().split('\n');
  assert.deepEqual(header?.split(/\s{2,}/), [
    'NAME',
    'WARM',
    'CONNECTED',
    'INPUT HASH',
    'INPUT AGE',
    'OUTPUT HASH',
    'SKIP-WARMING',
  ]);
  assert.deepEqual(row?.split(/\s+/), ['east', 'False', 'False', '-', '-', '-', 'False']);
  assert.deepEqual(rest, []);
  assert.equal(json.code, 0, json.stderr);
  assert.ok(!text.stdout.includes(token) && !json.stdout.includes(token), 'the token is shown only at registration');
});

test('given --token-out and --ca-out, when a cluster is registered, then the token file has mode 0600 and the command line names both files', async (t) => {
  const { server, url } = await startServer(t);
  const dir = await tempDir(t);
  const tokenFile = join(dir, 'east.token');
  const caFile = join(dir, 'relay-ca.pem');

  const result = await meshctlAt(url, ['cluster', 'register', 'east', '--token-out', tokenFile, '--ca-out', caFile]);

  assert.equal(result.code, 0, result.stderr);
  const token = await readFile(tokenFile, 'utf8');
  assert.equal(token, tokenFrom(result.stdout));
  assert.equal((await stat(tokenFile)).mode & 0o777, 0o600);
  assert.equal(await readFile(caFile, 'utf8'), server.ca.certPem);
  assert.ok(result.stdout.includes(`--token-file ${tokenFile} --root-ca-file ${caFile} `), result.stdout);
  await server.registry.verifyToken('east', token);
});

test('given --token-out in a missing directory, when a cluster is registered, then meshctl exits 2 and nothing is registered', async (t) => {
  const { server, url } = await startServer(t);
  const dir = await tempDir(t);

  const result = await meshctlAt(url, [
    'cluster',
    'register',
    'east',
    '--token-out',
    join(dir, 'no-such-dir', 'east.token'),
  ]);

  assert.equal(result.code, 2);
  assert.match(result.stderr, /^meshctl: --token-out: cannot write .* does not exist or is not writable\n$/);
  assert.equal(server.registry.get('east'), undefined);
});

test('given -o json, when a cluster is registered with options, then the raw answer is printed', async (t) => {
  const { server, url } = await startServer(t);

  const result = await meshctlAt(url, [
    '-o',
    'json',
    'cluster',
    'register',
    'west',
    '--skip-warming',
    '--cluster-domain',
    'west.example',
  ]);

  assert.equal(result.code, 0, result.stderr);
  const answer = JSON.parse(result.stdout) as {
    cluster: { name: string; skipWarming: boolean; clusterDomain: string };
    token: string;
    relay: { address: string; caBundlePem: string };
  };
  assert.equal(answer.cluster.name, 'west');
  assert.equal(answer.cluster.skipWarming, true);
  assert.equal(answer.cluster.clusterDomain, 'west.example');
  assert.equal(answer.relay.address, `localhost:${server.relayPort}`);
  assert.equal(answer.relay.caBundlePem, server.ca.certPem);
  await server.registry.verifyToken('west', answer.token);
});

test('given a registered cluster, when it is registered again, then meshctl exits 1 with MESHRELAY_ERR_CLUSTER_EXISTS on one line', async (t) => {
  const { url } = await startServer(t);
  assert.equal((await meshctlAt(url, ['cluster', 'register', 'east'])).code, 0);

  const again = await meshctlAt(url, ['cluster', 'register', 'east']);

  assert.equal(again.code, 1);
  assert.equal(again.stdout, '');
  assert.match(
    again.stderr,
    /^meshctl: MESHRELAY_ERR_CLUSTER_EXISTS: .*east.* \(POST \/api\/v1\/clusters, HTTP 409\)\n$/,
  );
});

test('given a registered cluster, when its token is rotated, then the new token is accepted and differs from the old one', async (t) => {
  const { server, url } = await startServer(t);
  const old = tokenFrom((await meshctlAt(url, ['cluster', 'register', 'east'])).stdout);

  const rotated = await meshctlAt(url, ['cluster', 'rotate-token', 'east']);

  assert.equal(rotated.code, 0, rotated.stderr);
  const fresh = tokenFrom(rotated.stdout);
  assert.notEqual(fresh, old);
  await server.registry.verifyToken('east', fresh);
});
