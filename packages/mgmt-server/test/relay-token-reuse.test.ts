import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { generateKeyPair } from '@meshrelay/certs';
import type { ClusterView } from '@meshrelay/registry';
import { waitFor } from '@meshrelay/testkit';
import { NS, kubeConfigFile, startFakeKube } from '../../registry/test/kube-harness.ts';
import { apiGet, register, startTestServer, type TestServer } from './harness.ts';

interface GrpcFailure {
  readonly code: number;
  readonly details: string;
}

function reuseCondition(server: TestServer, cluster: string) {
  return server.registry.get(cluster)?.status?.conditions?.find((c) => c.type === 'RelayTokenReused');
}

async function refusal(promise: Promise<unknown>): Promise<GrpcFailure> {
  try {
    await promise;
  } catch (err) {
    return err as GrpcFailure;
  }
  assert.fail('expected the registration to be refused');
}

test(
  'given a token that registered a key, when the same key registers with it again, then each registration gets a certificate',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const { token } = await server.registry.register('east', {});
    const agentKey = generateKeyPair();

    const first = await register(server, 'east', token, 'east', agentKey);
    const again = await register(server, 'east', token, 'east', agentKey);

    assert.match(first.certPem, /BEGIN CERTIFICATE/);
    assert.match(again.certPem, /BEGIN CERTIFICATE/);
    assert.equal(reuseCondition(server, 'east'), undefined);
  },
);

test(
  'given a token that registered a key, when another key registers with it, then TOKEN_REUSED, the cluster reports it, and the first key still registers',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const { token } = await server.registry.register('east', {});
    const agentKey = generateKeyPair();
    await register(server, 'east', token, 'east', agentKey);

    const err = await refusal(register(server, 'east', token));
    const again = await register(server, 'east', token, 'east', agentKey);

    assert.equal(err.code, status.PERMISSION_DENIED);
    assert.match(
      err.details,
      /^MESHRELAY_ERR_TOKEN_REUSED: the relay token of cluster "east" already registered another key/,
    );
    assert.match(err.details, /meshctl cluster rotate-token east/);
    const condition = reuseCondition(server, 'east');
    assert.equal(condition?.status, 'True');
    assert.equal(condition?.reason, 'SecondKeyRefused');
    assert.match(condition?.message ?? '', /meshctl cluster revoke east/);
    const view = await apiGet<ClusterView>(server, '/api/v1/clusters/east');
    assert.equal(view.relayTokenReuse?.since, condition?.lastTransitionTime);
    assert.match(again.certPem, /BEGIN CERTIFICATE/, 'the agent that registered first is not locked out');
  },
);

test(
  'given a reported reuse, when the operator rotates the token and the new agent registers with it, then it gets its certificate and the report is cleared',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const { token } = await server.registry.register('east', {});
    await register(server, 'east', token);
    await refusal(register(server, 'east', token));

    const rotated = await server.registry.rotateToken('east');
    const newAgentKey = generateKeyPair();
    const registered = await register(server, 'east', rotated.token, 'east', newAgentKey);

    assert.match(registered.certPem, /BEGIN CERTIFICATE/);
    assert.equal(reuseCondition(server, 'east')?.status, 'False');
    assert.equal((await apiGet<ClusterView>(server, '/api/v1/clusters/east')).relayTokenReuse, null);
  },
);

test(
  'given a rotated token, when the replaced one (valid for the overlap) comes with another key, then it is refused and reported again',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const { token } = await server.registry.register('east', {});
    await register(server, 'east', token);
    const rotated = await server.registry.rotateToken('east');
    await register(server, 'east', rotated.token);

    const err = await refusal(register(server, 'east', token));

    assert.equal(err.code, status.PERMISSION_DENIED);
    assert.equal(reuseCondition(server, 'east')?.status, 'True');
  },
);

test(
  'given a cluster deregistered and registered again under its name, when its new agent registers with the new token, then it is not refused for the old one',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const { token } = await server.registry.register('east', {});
    await register(server, 'east', token);
    await server.registry.deregister('east');
    const fresh = await server.registry.register('east', {});

    const registered = await register(server, 'east', fresh.token);

    assert.match(registered.certPem, /BEGIN CERTIFICATE/);
  },
);

test(
  'given two kubernetes-mode replicas, when a token registered a key through one and another key comes through the other, then it is refused and the CR status reports it',
  { timeout: 90_000 },
  async (t) => {
    const fake = await startFakeKube(t);
    const kubeconfig = kubeConfigFile(t, fake);
    const replica = (name: string) =>
      startTestServer(t, ['--registry', 'kubernetes', '--kubeconfig', kubeconfig, '--replica-name', name]);
    const [r0, r1] = await Promise.all([replica('r0'), replica('r1')]);
    const { token } = await r0.registry.register('east', {});
    await register(r0, 'east', token);

    const err = await refusal(register(r1, 'east', token));

    assert.equal(err.code, status.PERMISSION_DENIED);
    assert.match(err.details, /MESHRELAY_ERR_TOKEN_REUSED/);
    const stored = () =>
      (
        fake.get('KubernetesCluster', 'east', NS)?.['status'] as
          { conditions?: Array<{ type: string; status: string }> } | undefined
      )?.conditions;
    await waitFor(() => stored()?.some((c) => c.type === 'RelayTokenReused' && c.status === 'True') === true, {
      message: 'RelayTokenReused never reached the CR status',
    });
  },
);
