import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CoordinationV1Api, KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { startFakeKubeApiServer, waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import { KubernetesLeaseStore, createKubernetesLeaderElector, leaseRecordOf } from '../src/index.ts';
import {
  frozenLeaderExpiresFirst,
  silentLogger,
  singleCandidateLeads,
  started,
  stoppedLeaderHandsOver,
  twoCandidatesOneLeader,
  waitForLeader,
  type ElectionBackend,
} from './support/election-scenarios.ts';

// Lease durations are whole seconds on a Lease object.
const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_200, retryPeriodMs: 150 };
const NAMESPACE = 'gloo-mesh';
const NAME = 'meshrelay-agent-east';

async function startFake(t: TestContext): Promise<{ fake: FakeKubeApiServer; kubeConfig: KubeConfig }> {
  const fake = await startFakeKubeApiServer();
  t.after(() => fake.stop());
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions(fake.kubeConfigOptions());
  return { fake, kubeConfig };
}

async function kubeBackend(
  t: TestContext,
): Promise<ElectionBackend & { readonly fake: FakeKubeApiServer; readonly kubeConfig: KubeConfig }> {
  const { fake, kubeConfig } = await startFake(t);
  return {
    fake,
    kubeConfig,
    timing: TIMING,
    elector: (identity) =>
      createKubernetesLeaderElector({
        kubeConfig,
        namespace: NAMESPACE,
        name: NAME,
        identity,
        logger: silentLogger,
        ...TIMING,
      }),
    store: () => new KubernetesLeaseStore(kubeConfig, NAMESPACE, NAME),
    readLease: async () => {
      const lease = fake.get('leases.coordination.k8s.io', NAME, NAMESPACE) as V1Lease | undefined;
      return lease ? leaseRecordOf(lease) : undefined;
    },
  };
}

test('given one candidate and no Lease, when it campaigns, then it creates the Lease and leads', async (t) => {
  await singleCandidateLeads(t, await kubeBackend(t));
});

test('given two candidates on one Lease, when both campaign, then exactly one leads at every sample', async (t) => {
  await twoCandidatesOneLeader(t, await kubeBackend(t));
});

test('given a leader and a follower, when the leader stops, then it releases the Lease and the follower takes over before expiry', async (t) => {
  await stoppedLeaderHandsOver(t, await kubeBackend(t));
});

test('given a leader whose API calls hang, when the Lease runs out, then it steps down first and the other takes over only after the lease duration', async (t) => {
  await frozenLeaderExpiresFirst(t, await kubeBackend(t));
});

test('given a leader, when the Lease is written, then it carries the client-go fields with microsecond times', async (t) => {
  const backend = await kubeBackend(t);
  const elector = started(t, backend.elector('east-0'));
  await waitForLeader([elector], 3_000);
  const api = backend.kubeConfig.makeApiClient(CoordinationV1Api);
  const lease = await api.readNamespacedLease({ name: NAME, namespace: NAMESPACE });
  assert.equal(lease.spec?.holderIdentity, 'east-0');
  assert.equal(lease.spec?.leaseDurationSeconds, 2);
  assert.equal(lease.spec?.leaseTransitions, 0);
  const raw = backend.fake.get('leases.coordination.k8s.io', NAME, NAMESPACE) as unknown as {
    spec: { renewTime: string; acquireTime: string };
  };
  assert.match(raw.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'renewTime is a MicroTime');
  assert.match(raw.spec.acquireTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

test('given the Lease changed between the read and the write, when the store writes, then the 409 is a lost race and nothing is written', async (t) => {
  const backend = await kubeBackend(t);
  const now = Date.now();
  const stale = {
    holder: 'old',
    acquireTimeMs: now - 60_000,
    renewTimeMs: now - 60_000,
    leaseDurationMs: 2_000,
    transitions: 4,
  };
  const first = await backend.store().update(() => stale);
  assert.equal(first.outcome, 'written');
  const store = backend.store();
  const result = await store.update((current) => {
    // Another candidate takes the expired lease while this one decides.
    const lease = backend.fake.get('leases.coordination.k8s.io', NAME, NAMESPACE) as V1Lease;
    const taken: V1Lease = { ...lease, spec: { ...lease.spec, holderIdentity: 'faster' } };
    backend.fake.put(taken);
    return {
      ...(current ?? stale),
      holder: 'slower',
      renewTimeMs: Date.now(),
      transitions: (current?.transitions ?? 0) + 1,
    };
  });
  assert.equal(result.outcome, 'conflict');
  assert.equal((await backend.readLease())?.holder, 'faster');
  assert.ok(
    backend.fake.requests.some((r) => r.method === 'PUT' && r.status === 409),
    'the API server answered 409',
  );
});

test('given the API server fails for a while, when the leader cannot renew within the deadline, then it steps down and leads again once the API is back', async (t) => {
  const backend = await kubeBackend(t);
  const elector = started(t, backend.elector('east-0'));
  await waitForLeader([elector], 3_000);
  const changes: boolean[] = [];
  elector.onChange((leader) => changes.push(leader));
  let failing = true;
  backend.fake.failNext(1_000_000, 503, { match: (r) => failing && r.path.includes('/leases') });
  const failingSince = Date.now();
  await waitFor(() => !elector.isLeader(), {
    timeoutMs: TIMING.leaseDurationMs,
    intervalMs: 5,
    message: 'the leader did not step down before its lease could expire',
  });
  assert.ok(
    Date.now() - failingSince >= TIMING.renewDeadlineMs - TIMING.retryPeriodMs,
    'kept leading while renewals could still succeed',
  );
  failing = false;
  await waitForLeader([elector], 3_000);
  assert.deepEqual(changes, [false, true]);
});
