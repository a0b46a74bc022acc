// `meshctl cluster revoke`: over the HTTP API, and with --kubeconfig straight through the
// Kubernetes API (the fake kube-apiserver from @meshrelay/testkit stands in for it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  register,
  service,
  streamError,
} from '../../packages/mgmt-server/test/harness.ts';
import { NS, kubeConfigFile, startFakeKube } from '../../packages/registry/test/kube-harness.ts';
import { meshctl, meshctlAt, startServer, tokenFrom } from './harness.ts';

test('given a connected cluster, when it is revoked with meshctl, then its stream closes, the new token is printed and only it works', async (t) => {
  const { server, url } = await startServer(t, ['--heartbeat-timeout', '60000']);
  const { token: oldToken } = await server.registry.register('east', {});
  const id = await register(server, 'east', oldToken);
  const stream = openPush(mtlsClient(t, server, id));
  pushSnapshot(stream, 'east', 1, [service('web')]);
  await next(stream, (m) => m.ack ?? undefined);
  const closed = streamError(stream, 30_000);

  const result = await meshctlAt(url, ['cluster', 'revoke', 'east']);

  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^Cluster "east" revoked: certificates issued before \S+ no longer work/m);
  assert.match((await closed).details, /MESHRELAY_ERR_CERTIFICATE_REVOKED/);
  const fresh = tokenFrom(result.stdout);
  await server.registry.verifyToken('east', fresh);
  await assert.rejects(
    server.registry.verifyToken('east', oldToken),
    (e: unknown) => e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_TOKEN_INVALID',
  );
  await assert.rejects(register(server, 'east', oldToken), (e: ServiceError) => e.code === status.UNAUTHENTICATED);
});

test('given an unknown cluster, when it is revoked with meshctl, then MESHRELAY_ERR_CLUSTER_NOT_FOUND and exit 1', async (t) => {
  const { url } = await startServer(t);
  const result = await meshctlAt(url, ['cluster', 'revoke', 'nowhere']);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /MESHRELAY_ERR_CLUSTER_NOT_FOUND/);
});

test('given a kubernetes-mode server, when meshctl revokes through the Kubernetes API, then the CR carries the mark, the server refuses the old certificate and accepts the new token', async (t) => {
  const fake = await startFakeKube(t);
  const kubeconfig = kubeConfigFile(t, fake);
  const { server } = await startServer(t, [
    '--registry',
    'kubernetes',
    '--kubeconfig',
    kubeconfig,
    '--safe-start-window',
    '0',
  ]);
  const { token: oldToken } = await server.registry.register('east', {});
  const old = await register(server, 'east', oldToken);

  const result = await meshctl(['-o', 'json', 'cluster', 'revoke', 'east', '--kubeconfig', kubeconfig]);

  assert.equal(result.code, 0, result.stderr);
  const answer = JSON.parse(result.stdout) as { token: string; revokedBefore: string };
  const spec = fake.get('KubernetesCluster', 'east', NS)?.['spec'] as Record<string, unknown>;
  assert.equal(spec['revokeCertificatesBefore'], answer.revokedBefore.replace(/\.\d{3}Z$/, 'Z'));
  await waitFor(() => server.registry.get('east')?.spec.revokeCertificatesBefore !== undefined, {
    message: 'the server to see the revocation',
  });
  const refused = await streamError(openPush(mtlsClient(t, server, old)));
  assert.match(refused.details, /MESHRELAY_ERR_CERTIFICATE_REVOKED/);
  await server.registry.verifyToken('east', answer.token);
  await assert.rejects(server.registry.verifyToken('east', oldToken));
});

test('given --token-ttl without --kubeconfig, when revoking, then a usage error names the flag and nothing is sent', async () => {
  const result = await meshctl(['--server', 'http://127.0.0.1:1', 'cluster', 'revoke', 'east', '--token-ttl', '600']);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /--token-ttl needs --kubeconfig/);
});
