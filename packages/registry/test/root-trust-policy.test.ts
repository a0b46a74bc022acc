// RootTrustPolicy: parsed into a typed value with Gloo's field names (table-driven), and followed
// from the fake kube-apiserver (a test double from @meshrelay/testkit) as it changes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { waitFor } from '@meshrelay/testkit';
import { startKubernetesRootTrustPolicy } from '../src/kubernetes-root-trust-policy.ts';
import { parseRootTrustPolicy } from '../src/root-trust-policy.ts';
import { NS, kubeConfigOf, startFakeKube } from './kube-harness.ts';

const TIMEOUT = { timeout: 60_000 };

function policy(
  name: string,
  spec: unknown,
): { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: unknown } {
  return { apiVersion: 'admin.gloo.solo.io/v2', kind: 'RootTrustPolicy', metadata: { name, namespace: NS }, spec };
}

const OPTIONS = { ttlDays: 730, rsaKeySizeBytes: 4096, orgName: 'acme', secretRotationGracePeriodRatio: 0.1 };

test(
  "given valid RootTrustPolicies, when parsed, then each gives the typed value Gloo's fields describe",
  TIMEOUT,
  () => {
    const cases: { spec: unknown; expected: unknown }[] = [
      {
        spec: {},
        expected: {
          mgmtServerCa: { type: 'generated', options: {} },
          intermediateCertOptions: {},
          autoRestartPods: false,
        },
      },
      {
        spec: {
          config: {
            mgmtServerCa: { generated: OPTIONS },
            intermediateCertOptions: { ttlDays: 1 },
            autoRestartPods: true,
          },
        },
        expected: {
          mgmtServerCa: { type: 'generated', options: OPTIONS },
          intermediateCertOptions: { ttlDays: 1 },
          autoRestartPods: true,
        },
      },
      {
        spec: { applyToMeshes: [{ name: 'istiod' }], config: { mgmtServerCa: { secretRef: { name: 'root-ca' } } } },
        expected: {
          mgmtServerCa: { type: 'secretRef', secretRef: { name: 'root-ca', namespace: NS } },
          intermediateCertOptions: {},
          autoRestartPods: false,
        },
      },
      {
        spec: { config: { mgmtServerCa: { secretRef: { name: 'root-ca', namespace: 'pki' } } } },
        expected: {
          mgmtServerCa: { type: 'secretRef', secretRef: { name: 'root-ca', namespace: 'pki' } },
          intermediateCertOptions: {},
          autoRestartPods: false,
        },
      },
    ];
    for (const { spec, expected } of cases) {
      const parsed = parseRootTrustPolicy(policy('root', spec));
      assert.deepEqual(
        parsed,
        { value: { name: 'root', namespace: NS, ...(expected as object) } },
        JSON.stringify(spec),
      );
    }
  },
);

test('given invalid RootTrustPolicies, when parsed, then each problem names the field that is wrong', TIMEOUT, () => {
  const cases: { spec: unknown; field: string }[] = [
    {
      spec: { config: { mgmtServerCa: { generated: {}, secretRef: { name: 'x' } } } },
      field: 'spec.config.mgmtServerCa: set one of generated and secretRef',
    },
    { spec: { config: { mgmtServerCa: { secretRef: {} } } }, field: 'spec.config.mgmtServerCa.secretRef.name' },
    {
      spec: { config: { mgmtServerCa: { generated: { ttlDays: 0 } } } },
      field: 'spec.config.mgmtServerCa.generated.ttlDays',
    },
    {
      spec: { config: { intermediateCertOptions: { rsaKeySizeBytes: 512 } } },
      field: 'spec.config.intermediateCertOptions.rsaKeySizeBytes',
    },
    {
      spec: { config: { intermediateCertOptions: { orgName: '' } } },
      field: 'spec.config.intermediateCertOptions.orgName',
    },
    {
      spec: { config: { intermediateCertOptions: { secretRotationGracePeriodRatio: 1 } } },
      field: 'spec.config.intermediateCertOptions.secretRotationGracePeriodRatio',
    },
    {
      spec: { config: { intermediateCertOptions: { ttl: 3 } } },
      field: 'spec.config.intermediateCertOptions.ttl: unknown field',
    },
    { spec: { config: { agentCa: { vault: {} } } }, field: 'spec.config.agentCa' },
    { spec: { config: { autoRestartPods: 'yes' } }, field: 'spec.config.autoRestartPods' },
    { spec: { confg: {} }, field: 'spec.confg: unknown field' },
  ];
  for (const { spec, field } of cases) {
    const parsed = parseRootTrustPolicy(policy('root', spec));
    assert.ok(
      'problem' in parsed && parsed.problem.startsWith(field),
      `${JSON.stringify(spec)} gave ${JSON.stringify(parsed)}`,
    );
  }
});

test(
  'given RootTrustPolicy CRs, when they are created, broken, fixed and deleted, then the state follows and keeps the last valid one',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    const source = await startKubernetesRootTrustPolicy({
      kubeConfig: kubeConfigOf(fake),
      namespace: NS,
      logger: pino({ level: 'silent' }),
      retryBaseMs: 20,
      retryMaxMs: 200,
    });
    t.after(() => source.close());
    assert.deepEqual(source.current(), { policy: undefined, problems: [], served: true });
    const states: unknown[] = [];
    source.onChange((s) => states.push(s));

    fake.put(policy('root', { config: { mgmtServerCa: { generated: OPTIONS } } }));
    await waitFor(() => source.current().policy?.name === 'root', { message: 'the created policy' });
    assert.deepEqual(source.current().policy?.mgmtServerCa, { type: 'generated', options: OPTIONS });

    fake.put(policy('root', { config: { intermediateCertOptions: { ttlDays: -1 } } }));
    fake.put(policy('second', {}));
    await waitFor(() => source.current().problems.length === 2, {
      message: `problems: ${JSON.stringify(source.current().problems)}`,
    });
    assert.match(
      source.current().problems.join('\n'),
      /RootTrustPolicy gloo-mesh\/root: spec\.config\.intermediateCertOptions\.ttlDays: .*; its previous valid version is kept/,
    );
    assert.match(
      source.current().problems.join('\n'),
      /RootTrustPolicy gloo-mesh\/second: ignored: one RootTrustPolicy applies, and gloo-mesh\/root \(first by name\) is the one read/,
    );
    assert.deepEqual(
      source.current().policy?.mgmtServerCa,
      { type: 'generated', options: OPTIONS },
      'the previous valid version is kept',
    );

    fake.remove('RootTrustPolicy', 'root', NS);
    await waitFor(() => source.current().policy?.name === 'second' && source.current().problems.length === 0, {
      message: 'the remaining policy read',
    });
    fake.remove('RootTrustPolicy', 'second', NS);
    await waitFor(() => source.current().policy === undefined, { message: 'no policy once all are deleted' });
    assert.ok(states.length >= 4);
  },
);

test(
  'given the RootTrustPolicy kind not served (no CRD), when the source starts, then it reports none and not served, and starts',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.failNext(1000, 404, { match: (r) => r.path.endsWith('/roottrustpolicies') });
    const source = await startKubernetesRootTrustPolicy({
      kubeConfig: kubeConfigOf(fake),
      namespace: NS,
      logger: pino({ level: 'silent' }),
      retryBaseMs: 20,
      retryMaxMs: 200,
    });
    t.after(() => source.close());
    assert.deepEqual(source.current(), { policy: undefined, problems: [], served: false });
  },
);
