import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshrelayError, OWNER_LABEL, OWNER_LABEL_VALUE, buildOutputSnapshot, type Resource } from '@meshrelay/api';
import { waitFor, type FakeKubeApiServer, type FakeKubeRequest } from '@meshrelay/testkit';
import { APPLIED_KINDS } from '../src/kube/kube-kinds.ts';
import {
  KubernetesOutputApplier,
  ownedObjectOf,
  type KubernetesApplierOptions,
} from '../src/apply/kubernetes-applier.ts';
import type { AppliedOutput } from '../src/apply/output-state.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { startFakeKube } from './support/kube.ts';

const OWNED = { [OWNER_LABEL]: OWNER_LABEL_VALUE };

function serviceEntry(name: string, port = 9080, labels: Record<string, string> = OWNED): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'istio-system', labels },
    spec: {
      hosts: [`${name}.global`],
      ports: [{ name: 'http', number: port, protocol: 'HTTP' }],
      resolution: 'STATIC',
    },
  };
}

function destinationRule(name: string): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: { name, namespace: 'istio-system', labels: OWNED },
    spec: { host: `${name}.global` },
  };
}

function output(resources: Resource[]): AppliedOutput {
  const built = buildOutputSnapshot({
    cluster: 'cluster-a',
    resources,
    provenance: [{ cluster: 'cluster-a', inputHash: 'a'.repeat(64) }],
  });
  return { cluster: built.cluster, hash: built.hash, provenance: built.provenance, resources: built.resources };
}

async function makeApplier(t: TestContext, kubeConfig: KubeConfig, options: Partial<KubernetesApplierOptions> = {}) {
  const stateDir = options.stateDir ?? (await tempDir(t));
  const { logger, lines } = captureLogger();
  const applier = new KubernetesOutputApplier({
    cluster: 'cluster-a',
    kubeConfig,
    stateDir,
    logger,
    retry: false,
    ...options,
  });
  t.after(() => applier.stop());
  return { applier, stateDir, lines };
}

const writes = (server: FakeKubeApiServer): FakeKubeRequest[] => server.requests.filter((r) => r.method !== 'GET');
const names = (server: FakeKubeApiServer, type: string): string[] =>
  server
    .objects(type, 'istio-system')
    .map((o) => o.metadata.name ?? '')
    .sort();

test('given a new output, when applied, then each resource is server-side applied with the field manager, force and the ownership label', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const out = output([serviceEntry('reviews'), destinationRule('reviews')]);
  assert.equal(await applier.apply(out), true);
  const patches = server.requests.filter((r) => r.method === 'PATCH');
  assert.equal(patches.length, 2);
  for (const patch of patches) {
    assert.equal(patch.contentType, 'application/apply-patch+yaml');
    assert.equal(patch.query['fieldManager'], 'meshrelay-agent');
    assert.equal(patch.query['force'], 'true');
  }
  const stored = server.get('ServiceEntry', 'reviews', 'istio-system');
  assert.equal(stored?.metadata.labels?.[OWNER_LABEL], OWNER_LABEL_VALUE);
  assert.deepEqual(
    stored?.metadata.managedFields?.map((f) => [f['manager'], f['operation']]),
    [['meshrelay-agent', 'Apply']],
  );
  assert.deepEqual(names(server, 'DestinationRule'), ['reviews']);
  assert.equal(applier.heldHash, out.hash);
});

test('given an applied output, when a changed output is applied, then the object is updated in place', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews', 9080)]));
  const uid = server.get('ServiceEntry', 'reviews', 'istio-system')?.metadata.uid;
  await applier.apply(output([serviceEntry('reviews', 9191)]));
  const stored = server.get('ServiceEntry', 'reviews', 'istio-system');
  assert.equal(stored?.metadata.uid, uid);
  assert.equal((stored?.['spec'] as { ports: Array<{ number: number }> }).ports[0]?.number, 9191);
});

test('given an output resource without the ownership label, when applied, then the applied object carries it anyway', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews', 9080, { app: 'reviews' })]));
  assert.deepEqual(server.get('ServiceEntry', 'reviews', 'istio-system')?.metadata.labels, {
    app: 'reviews',
    [OWNER_LABEL]: OWNER_LABEL_VALUE,
  });
});

test('given owned and foreign objects, when an output without some of them is applied, then only owned objects absent from it are pruned', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(serviceEntry('hand-made', 9080, { app: 'hand-made' }));
  server.put(serviceEntry('other-owner', 9080, { [OWNER_LABEL]: 'someone-else' }));
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings'), destinationRule('ratings')]));
  assert.deepEqual(names(server, 'ServiceEntry'), ['hand-made', 'other-owner', 'ratings', 'reviews']);
  await applier.apply(output([serviceEntry('reviews')]));
  assert.deepEqual(names(server, 'ServiceEntry'), ['hand-made', 'other-owner', 'reviews']);
  assert.deepEqual(names(server, 'DestinationRule'), []);
  const deletes = server.requests
    .filter((r) => r.method === 'DELETE')
    .map((r) => r.path)
    .sort();
  assert.deepEqual(deletes, [
    '/apis/networking.istio.io/v1/namespaces/istio-system/destinationrules/ratings',
    '/apis/networking.istio.io/v1/namespaces/istio-system/serviceentries/ratings',
  ]);
});

test('given list items whose own labels are not ours, when pruning decides what it owns, then they are never candidates', () => {
  const kind = APPLIED_KINDS[0]!;
  const item = (labels: Record<string, string> | undefined) => ({
    metadata: { name: 'x', namespace: 'istio-system', uid: 'u1', ...(labels ? { labels } : {}) },
  });
  // The label selector is not trusted alone: a server that ignored it must not make us delete foreign objects.
  assert.equal(ownedObjectOf(kind, item(undefined)), undefined);
  assert.equal(ownedObjectOf(kind, item({ app: 'x' })), undefined);
  assert.equal(ownedObjectOf(kind, item({ [OWNER_LABEL]: 'someone-else' })), undefined);
  assert.deepEqual(ownedObjectOf(kind, item(OWNED)), {
    id: 'ServiceEntry.networking.istio.io/v1 istio-system/x',
    namespace: 'istio-system',
    name: 'x',
    uid: 'u1',
  });
});

test('given one resource failing to apply, when the output is applied, then it is refused, nothing is pruned and the previous output stays held', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const first = output([serviceEntry('reviews'), serviceEntry('ratings')]);
  await applier.apply(first);
  const writesBefore = writes(server).length;
  server.failNext(1, 500, { match: (r) => r.method === 'PATCH' && r.path.endsWith('/serviceentries/details') });
  await assert.rejects(
    applier.apply(output([serviceEntry('reviews', 9191), serviceEntry('details')])),
    (err: unknown) =>
      err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_UNAVAILABLE' && /details.*500/.test(err.message),
  );
  assert.deepEqual(names(server, 'ServiceEntry'), ['ratings', 'reviews'], 'ratings was not pruned');
  assert.equal(
    writes(server)
      .slice(writesBefore)
      .filter((r) => r.method === 'DELETE').length,
    0,
  );
  assert.equal(applier.heldHash, first.hash);
});

test('given a failed apply and background retry, when the API recovers, then the output is applied and pruned without a new push', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig, { retry: { baseMs: 20, capMs: 50 } });
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings')]));
  server.failNext(2, 503, { match: (r) => r.method === 'PATCH' && r.path.endsWith('/serviceentries/details') });
  const second = output([serviceEntry('details')]);
  await assert.rejects(applier.apply(second));
  await waitFor(() => applier.heldHash === second.hash, { timeoutMs: 5000 });
  assert.deepEqual(names(server, 'ServiceEntry'), ['details']);
});

test('given a failing ownership list, when the output is applied, then nothing is pruned and the apply is refused', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const first = output([serviceEntry('reviews'), serviceEntry('ratings')]);
  await applier.apply(first);
  server.failNext(1, 500, {
    match: (r) => r.method === 'GET' && r.path === '/apis/networking.istio.io/v1/serviceentries',
  });
  await assert.rejects(applier.apply(output([serviceEntry('reviews')])), /pruning failed/);
  assert.deepEqual(names(server, 'ServiceEntry'), ['ratings', 'reviews']);
  assert.equal(applier.heldHash, first.hash);
});

test('given an applied output, when the same output is applied again, then no API call is made', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const out = output([serviceEntry('reviews')]);
  await applier.apply(out);
  const before = server.requests.length;
  assert.equal(await applier.apply(out), false);
  assert.equal(server.requests.length, before);
});

test('given an applier restarted on the same state dir, when the held output arrives again, then it is restored and nothing is sent', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier, stateDir } = await makeApplier(t, kubeConfig);
  const out = output([serviceEntry('reviews')]);
  await applier.apply(out);
  await applier.stop();
  const { applier: restarted } = await makeApplier(t, kubeConfig, { stateDir });
  const before = server.requests.length;
  assert.equal((await restarted.restore())?.hash, out.hash);
  assert.equal(restarted.heldHash, out.hash);
  assert.equal(await restarted.apply(out), false);
  assert.equal(server.requests.length, before);
});

test('given an applied output, when the server sends an empty output, then every owned object is pruned (the server decided)', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(serviceEntry('hand-made', 9080, {}));
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews'), destinationRule('reviews')]));
  await applier.apply(output([]));
  assert.deepEqual(names(server, 'ServiceEntry'), ['hand-made']);
  assert.deepEqual(names(server, 'DestinationRule'), []);
});

test('given an output whose resources do not hash to its hash, when applied, then it is refused before any API call', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const out = output([serviceEntry('reviews')]);
  await assert.rejects(
    applier.apply({ ...out, resources: [serviceEntry('ratings')] }),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
  );
  assert.equal(server.requests.length, 0);
});

const patches = (server: FakeKubeApiServer, from: number): FakeKubeRequest[] =>
  server.requests.slice(from).filter((r) => r.method === 'PATCH');

test('given an applied output, when one resource of it changes, then only that resource is applied and nothing is listed or deleted', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  const services = ['details', 'productpage', 'ratings', 'reviews'];
  await applier.apply(output([...services.map((n) => serviceEntry(n)), destinationRule('reviews')]));
  const before = server.requests.length;
  await applier.apply(
    output([...services.map((n) => serviceEntry(n, n === 'ratings' ? 9191 : 9080)), destinationRule('reviews')]),
  );
  const sent = server.requests.slice(before);
  assert.deepEqual(
    sent.map((r) => `${r.method} ${r.path}`),
    ['PATCH /apis/networking.istio.io/v1/namespaces/istio-system/serviceentries/ratings'],
  );
  assert.equal(
    (server.get('ServiceEntry', 'ratings', 'istio-system')?.['spec'] as { ports: Array<{ number: number }> }).ports[0]
      ?.number,
    9191,
  );
});

test('given an applied output, when a resource is added, then only it is applied and owned objects are listed for pruning', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings')]));
  const before = server.requests.length;
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings'), serviceEntry('details')]));
  assert.deepEqual(
    patches(server, before).map((r) => r.path),
    ['/apis/networking.istio.io/v1/namespaces/istio-system/serviceentries/details'],
  );
  assert.equal(
    server.requests.slice(before).filter((r) => r.method === 'GET').length,
    APPLIED_KINDS.length,
    'one ownership list per kind',
  );
  assert.deepEqual(names(server, 'ServiceEntry'), ['details', 'ratings', 'reviews']);
});

test('given a new leadership term (stop, or a restore), when the next output is applied, then every resource is applied again', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier, stateDir } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings')]));
  // Another replica may have led in between: what this one applied before proves nothing about the cluster now.
  await applier.stop();
  let before = server.requests.length;
  await applier.apply(output([serviceEntry('reviews', 9191), serviceEntry('ratings')]));
  assert.equal(patches(server, before).length, 2);
  await applier.stop();
  const { applier: restarted } = await makeApplier(t, kubeConfig, { stateDir });
  await restarted.restore();
  before = server.requests.length;
  await restarted.apply(output([serviceEntry('reviews', 9292), serviceEntry('ratings')]));
  assert.equal(patches(server, before).length, 2);
  before = server.requests.length;
  await restarted.apply(output([serviceEntry('reviews', 9393), serviceEntry('ratings')]));
  assert.equal(patches(server, before).length, 1, 'within a term only the change is applied');
});

test('given a failed change, when it is retried, then the changed resources are applied again until one apply completes', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const { applier } = await makeApplier(t, kubeConfig);
  await applier.apply(output([serviceEntry('reviews'), serviceEntry('ratings')]));
  server.failNext(1, 500, { match: (r) => r.method === 'PATCH' && r.path.endsWith('/serviceentries/ratings') });
  const changed = output([serviceEntry('reviews', 9191), serviceEntry('ratings', 9191)]);
  await assert.rejects(applier.apply(changed));
  const before = server.requests.length;
  assert.equal(await applier.apply(changed), true);
  assert.deepEqual(
    patches(server, before)
      .map((r) => r.path.split('/').pop())
      .sort(),
    ['ratings', 'reviews'],
  );
  assert.equal(applier.heldHash, changed.hash);
});
