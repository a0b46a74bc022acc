/**
 * Relay.MeshTrust over real mTLS against a real server with a RootTrustPolicy file: a valid CSR is
 * signed for the cluster of the client certificate, a bad one is refused with INVALID_ARGUMENT
 * naming the problem and the previous record stands; without a policy mesh trust is off.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { status as grpcStatus } from '@grpc/grpc-js';
import { rootIdOf } from '@meshrelay/certs';
import { mtlsClient, registerCluster, startTestServer } from './harness.ts';
import { GENERATED_POLICY, intermediateCsr, meshTrust, policyFile, trustStatusOf } from './mesh-trust-harness.ts';

const TIMEOUT = { timeout: 120_000 };

test(
  'given no RootTrustPolicy, when an agent asks for its mesh trust, then it is told mesh trust is off',
  TIMEOUT,
  async (t) => {
    const server = await startTestServer(t);
    const east = await registerCluster(server, 'east');
    const res = await meshTrust(mtlsClient(t, server, east), { trustDomain: 'cluster.local' });
    assert.equal(res.enabled, false);
    assert.equal((await trustStatusOf(server)).enabled, false);
    // Both routes sit behind the admin credential like every /api/v1 route.
    assert.equal((await fetch(`${server.api}/api/v1/trust`)).status, 401);
    assert.equal((await fetch(`${server.api}/api/v1/trust/rotate`, { method: 'POST' })).status, 401);
  },
);

test(
  'given a generated-root policy file, when a cluster sends a valid CSR, then its intermediate is signed by the root for that cluster',
  TIMEOUT,
  async (t) => {
    const server = await startTestServer(t, ['--root-trust-policy', policyFile(t), '--trust-tick', '100ms']);
    const east = await registerCluster(server, 'east');
    const { csrPem } = await intermediateCsr('east', 'east.example');
    const res = await meshTrust(mtlsClient(t, server, east), {
      intermediateCsrPem: csrPem,
      trustDomain: 'east.example',
    });

    assert.equal(res.enabled, true);
    assert.equal(Number(res.generation), 1);
    assert.equal(res.phase, 0);
    assert.equal(res.bundleRootPems.length, 1);
    const root = new X509Certificate(res.bundleRootPems[0] ?? '');
    assert.equal(res.signingRootId, rootIdOf(root.toString()));
    assert.equal(res.signingRootPem, res.bundleRootPems[0]);
    const intermediate = new X509Certificate(res.intermediateCertPem);
    assert.ok(intermediate.verify(root.publicKey), 'the root signed the intermediate');
    assert.ok(intermediate.ca, 'the intermediate is a CA');
    assert.match(intermediate.subject, /CN=east/);
    assert.equal(intermediate.subjectAltName, 'URI:spiffe://east.example');
    assert.deepEqual(
      { rsaKeyBits: res.rsaKeyBits, orgName: res.orgName, graceRatio: res.graceRatio, ttlDays: res.ttlDays },
      { rsaKeyBits: 2048, orgName: 'acme', graceRatio: 0.2, ttlDays: 7 },
    );

    const status = await trustStatusOf(server);
    assert.equal(status.policy?.mgmtServerCa, 'generated');
    assert.deepEqual(
      status.roots.map((r) => r.id),
      [res.signingRootId],
    );
    const cluster = status.clusters.find((c) => c.cluster === 'east');
    assert.equal(cluster?.lastSigned?.rootId, res.signingRootId);
    assert.equal(cluster?.trustDomain, 'east.example');
  },
);

test(
  'given a signed intermediate, when the cluster sends a bad CSR, then INVALID_ARGUMENT names the problem and the previous record stands',
  TIMEOUT,
  async (t) => {
    const server = await startTestServer(t, ['--root-trust-policy', policyFile(t), '--trust-tick', '100ms']);
    const east = await registerCluster(server, 'east');
    const client = mtlsClient(t, server, east);
    await meshTrust(client, {
      intermediateCsrPem: (await intermediateCsr('east')).csrPem,
      trustDomain: 'cluster.local',
    });
    const before = (await trustStatusOf(server)).clusters.find((c) => c.cluster === 'east');
    assert.ok(before?.lastSigned, 'the first CSR was signed');

    // A CSR that names another cluster: the cluster is the one of the client certificate.
    const foreign = (await intermediateCsr('west')).csrPem;
    await assert.rejects(
      meshTrust(client, { intermediateCsrPem: foreign, trustDomain: 'cluster.local', appliedGeneration: 1 }),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, grpcStatus.INVALID_ARGUMENT);
        assert.match(err.details, /MESHRELAY_ERR_CERTIFICATE: .*(CN|common name|cluster)/i);
        return true;
      },
    );
    await assert.rejects(
      meshTrust(client, { intermediateCsrPem: 'not a CSR', trustDomain: 'cluster.local', appliedGeneration: 1 }),
      (err: { code: number }) => err.code === grpcStatus.INVALID_ARGUMENT,
    );
    await assert.rejects(
      meshTrust(client, { trustDomain: 'Not A Domain!', appliedGeneration: 1 }),
      (err: { code: number; details: string }) =>
        err.code === grpcStatus.INVALID_ARGUMENT && /trust_domain/.test(err.details),
    );
    const after = (await trustStatusOf(server)).clusters.find((c) => c.cluster === 'east');
    assert.deepEqual(after, before, 'nothing of a refused request was recorded');
  },
);

test(
  "given a policy asking for 3072-bit intermediate keys, when a cluster sends a 2048-bit CSR, then INVALID_ARGUMENT names both sizes and the policy's size is what the agent is told",
  TIMEOUT,
  async (t) => {
    const policy = GENERATED_POLICY.replace(
      /(intermediateCertOptions:\n\s+ttlDays: 7\n\s+rsaKeySizeBytes: )2048/,
      '$13072',
    );
    assert.notEqual(policy, GENERATED_POLICY);
    const server = await startTestServer(t, ['--root-trust-policy', policyFile(t, policy), '--trust-tick', '100ms']);
    const east = await registerCluster(server, 'east');
    const client = mtlsClient(t, server, east);
    await assert.rejects(
      meshTrust(client, { intermediateCsrPem: (await intermediateCsr('east')).csrPem, trustDomain: 'cluster.local' }),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, grpcStatus.INVALID_ARGUMENT);
        assert.match(err.details, /RSA-2048; RSA-3072 to RSA-8192 is required/);
        return true;
      },
    );
    assert.equal((await meshTrust(client, { trustDomain: 'cluster.local' })).rsaKeyBits, 3072);
    assert.equal((await trustStatusOf(server)).clusters.find((c) => c.cluster === 'east')?.lastSigned, undefined);
  },
);
