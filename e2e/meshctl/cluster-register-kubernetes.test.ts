// meshctl against the `kubernetes` registry backend, with the fake kube-apiserver (a test double
// of kube-apiserver from @meshrelay/testkit) standing in for the management cluster's API.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  register,
  service,
} from '../../packages/mgmt-server/test/harness.ts';
import { NS, kubeConfigFile, startFakeKube } from '../../packages/registry/test/kube-harness.ts';
import type { CheckReport } from '@meshrelay/meshctl';
import { meshctl, meshctlAt, startServer, tempDir, tokenFrom, type RunningServer } from './harness.ts';

function secretField(fake: FakeKubeApiServer, name: string, key: string): string | undefined {
  const data = fake.get('Secret', name, NS)?.['data'] as Record<string, string> | undefined;
  return data?.[key] === undefined ? undefined : Buffer.from(data[key], 'base64').toString('utf8');
}

async function kubeModeServer(t: TestContext, fake: FakeKubeApiServer): Promise<RunningServer> {
  return startServer(t, [
    '--registry',
    'kubernetes',
    '--kubeconfig',
    kubeConfigFile(t, fake),
    '--safe-start-window',
    '0',
  ]);
}

test('given a management cluster API, when a cluster is registered with --kubeconfig, then the CR and the hashed token Secret are created', async (t) => {
  const fake = await startFakeKube(t);
  const kubeconfig = kubeConfigFile(t, fake);

  const result = await meshctl([
    'cluster',
    'register',
    'east',
    '--kubeconfig',
    kubeconfig,
    '--relay-address',
    'relay.example.com:9900',
    '--skip-warming',
  ]);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  const token = tokenFrom(result.stdout);
  assert.deepEqual(fake.get('KubernetesCluster', 'east', NS)?.['spec'], { skipWarming: true });
  assert.equal(secretField(fake, 'relay-token-east', 'sha256'), createHash('sha256').update(token).digest('hex'));
  assert.match(result.stdout, /Secret gloo-mesh\/relay-root-ca does not exist yet/);
});

test('given --kubeconfig, when a cluster is registered, then the exact kubectl and helm install lines for the agent are printed', async (t) => {
  const fake = await startFakeKube(t);
  const dir = await tempDir(t);
  const tokenFile = join(dir, 'east.token');

  const result = await meshctl([
    'cluster',
    'register',
    'east',
    '--kubeconfig',
    kubeConfigFile(t, fake),
    '--relay-address',
    'relay.example.com:9900',
    '--token-out',
    tokenFile,
  ]);

  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.split('\n').map((l) => l.trim());
  assert.ok(lines.includes('kubectl create namespace gloo-mesh'), result.stdout);
  assert.ok(
    lines.includes(
      `kubectl --namespace gloo-mesh create secret generic relay-identity-token-secret --from-file=token=${tokenFile}`,
    ),
    result.stdout,
  );
  assert.ok(
    lines.includes(
      'kubectl --namespace gloo-mesh create secret generic relay-root-tls-secret --from-file=ca.crt=<root-ca-file>',
    ),
    result.stdout,
  );
  assert.ok(
    lines.includes(
      'helm install meshrelay-agent deploy/helm/meshrelay --namespace gloo-mesh --set glooMgmtServer.enabled=false --set redis.deploy=false ' +
        '--set glooAgent.enabled=true --set glooAgent.cluster=east --set glooAgent.relay.serverAddress=relay.example.com:9900 ' +
        '--set glooAgent.relay.tokenSecret.name=relay-identity-token-secret --set glooAgent.relay.tokenSecret.key=token ' +
        '--set glooAgent.relay.rootCaSecret.name=relay-root-tls-secret --set glooAgent.relay.rootCaSecret.key=ca.crt',
    ),
    result.stdout,
  );
  assert.equal(await readFile(tokenFile, 'utf8'), tokenFrom(result.stdout));
});

test('given a kubernetes-mode server, when meshctl registers through the Kubernetes API, then the server picks it up and accepts the token', async (t) => {
  const fake = await startFakeKube(t);
  const running = await kubeModeServer(t, fake);
  const dir = await tempDir(t);
  const caFile = join(dir, 'ca.pem');

  const result = await meshctl([
    '-o',
    'json',
    'cluster',
    'register',
    'east',
    '--kubeconfig',
    kubeConfigFile(t, fake),
    '--ca-out',
    caFile,
  ]);

  assert.equal(result.code, 0, result.stderr);
  const answer = JSON.parse(result.stdout) as { token: string; caBundlePem: string; install: string[] };
  assert.equal(answer.caBundlePem, running.server.ca.certPem);
  assert.equal(await readFile(caFile, 'utf8'), running.server.ca.certPem);
  assert.ok(answer.install.some((l) => l.includes('--set glooAgent.relay.serverAddress=<relay-address>')));
  await waitFor(() => running.server.registry.get('east') !== undefined, { message: 'the server never saw the CR' });
  await running.server.registry.verifyToken('east', answer.token);
  await waitFor(() => running.server.registry.get('east')?.status?.conditions?.[0]?.reason === 'ClusterRegistered');
});

test('given --token-ttl as a duration, when a cluster is registered with --kubeconfig, then the token expires after that long', async (t) => {
  const fake = await startFakeKube(t);
  const before = Date.now();

  const result = await meshctl([
    '-o',
    'json',
    'cluster',
    'register',
    'east',
    '--kubeconfig',
    kubeConfigFile(t, fake),
    '--token-ttl',
    '2h',
  ]);

  assert.equal(result.code, 0, result.stderr);
  const lifetimeMs = Date.parse((JSON.parse(result.stdout) as { tokenExpiresAt: string }).tokenExpiresAt) - before;
  assert.ok(lifetimeMs > 7_190_000 && lifetimeMs <= 7_200_000 + 1000, `the token lives ${lifetimeMs} ms`);
});

test('given an existing cluster, when it is registered again with --kubeconfig, then meshctl exits 1 naming the conflict', async (t) => {
  const fake = await startFakeKube(t);
  const kubeconfig = kubeConfigFile(t, fake);
  await meshctl(['cluster', 'register', 'east', '--kubeconfig', kubeconfig]);

  const again = await meshctl(['cluster', 'register', 'east', '--kubeconfig', kubeconfig]);

  assert.equal(again.code, 1);
  assert.equal(again.stderr, 'meshctl: cluster "east" is already registered\n');
});

test('given Kubernetes-only flags without --kubeconfig, when register runs, then it is a usage error and nothing is called', async () => {
  const result = await meshctlAt('http://127.0.0.1:9', ['cluster', 'register', 'east', '--namespace', 'mesh']);

  assert.equal(result.code, 2);
  assert.equal(result.stderr, 'meshctl: --namespace needs --kubeconfig\n');
});

test('given a kubernetes-mode server with a connected warm cluster, when checked, then every check passes', async (t) => {
  const fake = await startFakeKube(t);
  const running = await kubeModeServer(t, fake);
  const registered = await meshctl(['cluster', 'register', 'east', '--kubeconfig', kubeConfigFile(t, fake)]);
  assert.equal(registered.code, 0, registered.stderr);
  await waitFor(() => running.server.registry.get('east') !== undefined);
  const client = mtlsClient(t, running.server, await register(running.server, 'east', tokenFrom(registered.stdout)));
  const push = openPush(client);
  t.after(() => push.end());
  pushSnapshot(push, 'east', 1, [service('web')]);
  await next(push, (m) => m.ack ?? undefined);
  const pull = openPull(client);
  t.after(() => pull.end());
  pull.write({ hello: { heldHash: '' } });
  await next(pull, (m) => m.header ?? undefined);

  const result = await meshctlAt(running.url, ['check', '-o', 'json']);

  const report = JSON.parse(result.stdout) as CheckReport;
  assert.equal(result.code, 0, result.stdout);
  assert.ok(report.checks.some((c) => c.name === 'cluster east warm' && c.ok));
});

test('given a kubernetes-mode server and a cluster that never connected, when checked, then meshctl exits 1', async (t) => {
  const fake = await startFakeKube(t);
  const running = await kubeModeServer(t, fake);
  await meshctl(['cluster', 'register', 'east', '--kubeconfig', kubeConfigFile(t, fake)]);
  await waitFor(() => running.server.registry.get('east') !== undefined);

  const result = await meshctlAt(running.url, ['check', '-o', 'json']);

  assert.equal(result.code, 1);
  const verdicts = Object.fromEntries((JSON.parse(result.stdout) as CheckReport).checks.map((c) => [c.name, c.ok]));
  assert.equal(verdicts['cluster east connected'], false);
  assert.equal(verdicts['cluster east warm'], false);
});
