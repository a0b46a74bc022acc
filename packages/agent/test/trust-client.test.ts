// The mesh trust client on a real relay session (the real management server with a RootTrustPolicy):
// renewal at the grace point with a new key, and answers altered in transit (as a faulty or hostile
// path would) writing nothing, keeping the previous cacerts and showing the error.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { rm, writeFile } from 'node:fs/promises';
import { Registry } from 'prom-client';
import type { relay } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { callMeshTrust } from '../src/relay/relay-rpc.ts';
import { DirectoryCacertsStore } from '../src/trust/cacerts-stores.ts';
import { MeshTrustClient } from '../src/trust/mesh-trust-client.ts';
import { createTrustMetrics } from '../src/trust/trust-metrics.ts';
import { WorkloadCertFiles } from '../src/trust/workload-cert-files.ts';
import { WorkloadIssuer } from '../src/trust/workload-issuer.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { startClient, startRelay } from './support/relay-harness.ts';

const TIMEOUT = { timeout: 120_000 };
const DAY = 86_400_000;

const POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata: { name: root, namespace: gloo-mesh }
spec:
  config:
    mgmtServerCa:
      generated: { rsaKeySizeBytes: 2048 }
    intermediateCertOptions: { ttlDays: 10, rsaKeySizeBytes: 2048, secretRotationGracePeriodRatio: 0.2 }
`;

type Answer = relay.v1.IMeshTrustResponse;

/**
 * A MeshTrustClient for "east" on a real relay session; `alter` may change each answer on its way in, and `clock`
 * is the client's own clock (the certificates are real, so only the client's decisions move with it).
 */
interface Transit {
  fn?: (a: Answer, csr: boolean) => Answer;
  /** Calls made while set never answer (a frozen path); counted in `held`. */
  freeze?: boolean;
  held?: number;
}

async function trustClient(t: TestContext, alter: Transit) {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'policy.yaml'), POLICY);
  const relayServer = await startRelay(t, { flags: ['--root-trust-policy', path.join(dir, 'policy.yaml')] });
  const { client } = await startClient(t, [relayServer]);
  await waitFor(() => client.channel !== undefined, { timeoutMs: 30_000, message: 'a relay session' });
  const store = new DirectoryCacertsStore(path.join(dir, 'cacerts'));
  const clock = { offsetMs: 0 };
  const registry = new Registry();
  const { logger } = captureLogger();
  const trust = new MeshTrustClient({
    cluster: 'east',
    store,
    issuer: new WorkloadIssuer({
      files: new WorkloadCertFiles(path.join(dir, 'workload-certs')),
      ttlSeconds: 3600,
      logger,
    }),
    call: (request) => {
      const channel = client.channel;
      if (channel === undefined) return undefined;
      if (alter.freeze) {
        alter.held = (alter.held ?? 0) + 1;
        return new Promise<Answer>(() => undefined);
      }
      return callMeshTrust(channel, request, 30_000).then((a) =>
        alter.fn ? alter.fn(a, (request.intermediateCsrPem ?? '') !== '') : a,
      );
    },
    discovered: () => [],
    intervalMs: 200,
    tickMs: 50,
    logger,
    metrics: createTrustMetrics(registry),
    now: () => Date.now() + clock.offsetMs,
  });
  t.after(() => trust.stop());
  return { trust, store, clock, registry, dir };
}

test('renewal at the grace point: a new key and a new intermediate under the same root', TIMEOUT, async (t) => {
  const { trust, store, clock } = await trustClient(t, {});
  await trust.start();
  await waitFor(() => trust.status.appliedGeneration > 0, { timeoutMs: 30_000, message: 'first intermediate' });
  const first = await store.load();

  clock.offsetMs = 7.5 * DAY; // 10 days of life, grace 0.2: not yet
  await new Promise((resolve) => setTimeout(resolve, 600));
  assert.deepEqual(await store.load(), first, 'before the grace point nothing is renewed');

  clock.offsetMs = 8.5 * DAY;
  await waitFor(async () => (await store.load())?.['ca-key.pem'] !== first?.['ca-key.pem'], {
    timeoutMs: 30_000,
    message: 'renewed past the grace point',
  });
  const renewed = await store.load();
  assert.notEqual(renewed?.['ca-cert.pem'], first?.['ca-cert.pem']);
  assert.equal(renewed?.['root-cert.pem'], first?.['root-cert.pem'], 'the same bundle');
  assert.equal(trust.status.intermediate?.signingRootId, trust.status.signingRootId);
});

test('an answer without the signed intermediate writes nothing and shows the error', TIMEOUT, async (t) => {
  const { trust, store, registry } = await trustClient(t, {
    fn: (a, csr) => (csr ? { ...a, intermediateCertPem: '' } : a),
  });
  await trust.start();
  await waitFor(() => trust.status.lastError?.stage === 'intermediate', { timeoutMs: 30_000, message: 'the error' });
  assert.match(trust.status.lastError?.message ?? '', /without a signed intermediate/);
  assert.equal(await store.load(), undefined, 'no cacerts written');
  assert.equal(trust.status.appliedGeneration, 0);
  assert.match(await registry.metrics(), /relay_agent_mesh_trust_errors_total\{stage="intermediate"\} [1-9]/);
});

test('after a good intermediate, a tampered answer keeps the previous cacerts byte for byte', TIMEOUT, async (t) => {
  const alter: Transit = {};
  const { trust, store, clock } = await trustClient(t, alter);
  await trust.start();
  await waitFor(() => trust.status.appliedGeneration > 0, { timeoutMs: 30_000, message: 'first intermediate' });
  const good = await store.load();
  const applied = trust.status.appliedGeneration;

  // A bundle that no longer holds the root that signs the chain: refused before anything is written.
  alter.fn = (a) => ({ ...a, bundleRootPems: [] });
  await waitFor(() => trust.status.lastError?.stage === 'response', { timeoutMs: 30_000, message: 'refused bundle' });
  assert.deepEqual(await store.load(), good);

  // A renewal (past the grace point) answered with an intermediate for someone else's key.
  alter.fn = (a, csr) => (csr ? { ...a, intermediateCertPem: good?.['ca-cert.pem'] ?? '' } : a);
  clock.offsetMs = 8.5 * DAY;
  await waitFor(() => /ca-key.pem does not match ca-cert.pem/.test(trust.status.lastError?.message ?? ''), {
    timeoutMs: 30_000,
    message: 'a certificate for another key is refused',
  });
  assert.deepEqual(await store.load(), good, 'the previous cacerts kept');
  assert.equal(trust.status.appliedGeneration, applied);

  alter.fn = undefined;
  // Written again, and the exchange that wrote it finished (the error cleared).
  await waitFor(
    async () => (await store.load())?.['ca-key.pem'] !== good?.['ca-key.pem'] && trust.status.lastError === undefined,
    { timeoutMs: 30_000, message: 'a good answer is written again' },
  );
});

test('stop does not wait for a call that never answers, and nothing is written after it', TIMEOUT, async (t) => {
  const alter: Transit = {};
  const { trust, store } = await trustClient(t, alter);
  await trust.start();
  await waitFor(() => trust.status.appliedGeneration > 0, { timeoutMs: 30_000, message: 'first intermediate' });
  const held = await store.load();
  alter.freeze = true;
  trust.callSoon();
  await waitFor(() => (alter.held ?? 0) > 0, { timeoutMs: 30_000, message: 'a call in flight' });
  await trust.stop();
  assert.deepEqual(await store.load(), held);
  assert.equal(trust.status.lastError, undefined, 'stopping is not an error');
});

test(
  'a new term reads cacerts again: removed meanwhile, a new intermediate is requested and written',
  TIMEOUT,
  async (t) => {
    const { trust, store, dir } = await trustClient(t, {});
    await trust.start();
    await waitFor(() => trust.status.appliedGeneration > 0, { timeoutMs: 30_000, message: 'first intermediate' });
    const first = await store.load();
    await trust.stop();
    await rm(path.join(dir, 'cacerts'), { recursive: true });
    await trust.start();
    await waitFor(async () => (await store.load()) !== undefined, {
      timeoutMs: 30_000,
      message: 'cacerts written again',
    });
    assert.notEqual((await store.load())?.['ca-key.pem'], first?.['ca-key.pem'], 'a new key');
  },
);
