/**
 * The RootTrustPolicy CR in force with the kubernetes registry (against the fake kube-apiserver,
 * a test double from @meshrelay/testkit): a generated root is kept in the Secret
 * meshrelay-mesh-root-ca-1; a secretRef root is read from the operator's Secret, a bad Secret is
 * reported naming it while the previous root is kept, and a new root in it starts a rotation.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { createMeshRoot, rootIdOf, type CaBundle } from '@meshrelay/certs';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import { startTestServer, type TestServer } from './harness.ts';
import { trustStatusOf } from './mesh-trust-harness.ts';
import type { TrustStatus } from '../src/mesh-trust/trust-status.ts';
import { NS, kubeConfigFile, startFakeKube } from '../../registry/test/kube-harness.ts';

const TIMEOUT = { timeout: 120_000 };

function policyCr(config: unknown) {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'RootTrustPolicy',
    metadata: { name: 'root', namespace: NS },
    spec: { config },
  };
}

function rootSecret(name: string, data: Record<string, string>) {
  const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS }, data: encoded };
}

function crStatus(fake: FakeKubeApiServer): Record<string, unknown> | undefined {
  return (fake.get('roottrustpolicies', 'root', NS) as { status?: Record<string, unknown> } | undefined)?.status;
}

const operatorRoot = (): CaBundle => createMeshRoot({ now: new Date(), rsaKeyBits: 2048, orgName: 'operator' });

function kubeServer(t: TestContext, fake: FakeKubeApiServer, replica = 'test-0'): Promise<TestServer> {
  return startTestServer(t, [
    ...['--registry', 'kubernetes', '--kubeconfig', kubeConfigFile(t, fake)],
    ...['--trust-tick', '100ms', '--replica-name', replica],
  ]);
}

async function waitForStatus(server: TestServer, ok: (s: TrustStatus) => boolean, message: string) {
  let last: TrustStatus | undefined;
  await waitFor(
    async () => {
      last = await trustStatusOf(server);
      return ok(last);
    },
    { timeoutMs: 20_000, intervalMs: 100, message },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; last status ${JSON.stringify(last)}`);
  });
  return last as TrustStatus;
}

test(
  'given a RootTrustPolicy CR with a generated root, then the root is kept in a Secret of its own and the CR status names it',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(policyCr({ mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } } }));
    const server = await kubeServer(t, fake);
    const status = await trustStatusOf(server);
    assert.equal(status.enabled, true);
    const secret = fake.get('secrets', 'meshrelay-mesh-root-ca-1', NS) as { data?: Record<string, string> } | undefined;
    const certPem = Buffer.from(secret?.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
    assert.deepEqual(
      status.roots.map((r) => [r.id, r.origin]),
      [[rootIdOf(certPem), 'generated']],
    );
    await waitFor(() => crStatus(fake)?.['trustGeneration'] === 1, { timeoutMs: 20_000, message: 'the CR status' });
    assert.deepEqual(crStatus(fake)?.['activeRoots'], status.roots);
  },
);

test(
  "given a secretRef policy, then the operator's root is used; a bad Secret is named and the root kept; a new root rotates in",
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    const first = operatorRoot();
    fake.put(rootSecret('operator-root', { 'ca.crt': first.certPem, 'ca.key': first.keyPem }));
    fake.put(policyCr({ mgmtServerCa: { secretRef: { name: 'operator-root' } } }));
    const server = await kubeServer(t, fake);
    const adopted = await trustStatusOf(server);
    assert.deepEqual(
      adopted.roots.map((r) => [r.id, r.origin]),
      [[rootIdOf(first.certPem), 'secretRef']],
    );

    fake.put(rootSecret('operator-root', { 'ca.crt': first.certPem }));
    const bad = await waitForStatus(server, (s) => s.problems.length > 0, 'the bad Secret is reported');
    assert.match(
      bad.problems[0] ?? '',
      /Secret gloo-mesh\/operator-root: expected data keys .*; the previous root is kept/,
    );
    assert.deepEqual(bad.roots, adopted.roots);
    assert.equal(bad.phase, 0);

    // A registered cluster that does not report holds the rotation in phase 1, where it is seen.
    await server.registry.register('silent', {});
    const second = operatorRoot();
    fake.put(rootSecret('operator-root', { 'tls.crt': second.certPem, 'tls.key': second.keyPem }));
    const rotating = await waitForStatus(server, (s) => s.phase !== 0, 'a rotation starts');
    assert.equal(rotating.problems.length, 0);
    assert.equal(rotating.phase, 1);
    assert.deepEqual(
      rotating.roots.map((r) => [r.id, r.origin]),
      [
        [rootIdOf(first.certPem), 'secretRef'],
        [rootIdOf(second.certPem), 'secretRef'],
      ],
    );
    assert.deepEqual(
      rotating.holds.map((h) => h.kind === 'cluster' && h.cluster),
      ['silent'],
    );
    assert.ok(fake.get('secrets', 'meshrelay-mesh-root-ca-2', NS), "the operator's new root is kept as root 2");
    await waitFor(() => crStatus(fake)?.['phase'] === 1, { timeoutMs: 20_000, message: 'the CR status shows phase 1' });
    const written = crStatus(fake);
    assert.deepEqual(
      (written?.['activeRoots'] as { id: string }[]).map((r) => r.id),
      rotating.roots.map((r) => r.id),
    );
    assert.deepEqual(written?.['clusters'], { silent: { appliedGeneration: 0 } });
    assert.equal(written?.['state'], 'ACCEPTED');
  },
);

test(
  'given two replicas starting together against one API with a generated root, then both use one root',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(policyCr({ mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } } }));
    const [a, b] = await Promise.all([kubeServer(t, fake, 'r0'), kubeServer(t, fake, 'r1')]);
    const [sa, sb] = await Promise.all([trustStatusOf(a), trustStatusOf(b)]);
    assert.equal(sa.roots.length, 1);
    assert.deepEqual(sa.roots, sb.roots);
    const rootSecrets = fake
      .objects('secrets', NS)
      .filter((o) => o.metadata.name?.startsWith('meshrelay-mesh-root-ca-'));
    assert.deepEqual(
      rootSecrets.map((o) => o.metadata.name),
      ['meshrelay-mesh-root-ca-1'],
    );
  },
);
