import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshrelayError, type InputSnapshot } from '@meshrelay/api';
import { waitFor, type FakeKubeApiServer, type FakeKubeObject } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import { KubernetesDiscoveryProvider, type KubernetesProviderOptions } from '../src/discovery/kubernetes-provider.ts';
import { captureLogger } from './support/fixtures.ts';
import { EXAMPLES_CLUSTER_A, isList, isWatch, manifestObjects, pod, service, startFakeKube } from './support/kube.ts';

const FAST_BACKOFF = { baseMs: 20, capMs: 100 };

async function startProvider(t: TestContext, kubeConfig: KubeConfig, options: Partial<KubernetesProviderOptions> = {}) {
  const { logger, lines } = captureLogger();
  const provider = new KubernetesDiscoveryProvider({
    cluster: 'cluster-a',
    kubeConfig,
    validate: validateInputResource,
    logger,
    debounceMs: 20,
    backoff: FAST_BACKOFF,
    epoch: 'epoch-1',
    ...options,
  });
  const published: InputSnapshot[] = [];
  provider.onSnapshot((s) => published.push(s));
  t.after(() => provider.stop());
  await provider.start();
  return { provider, published, lines };
}

async function loadExamples(server: FakeKubeApiServer): Promise<void> {
  for (const obj of await manifestObjects(EXAMPLES_CLUSTER_A)) server.put(obj);
}

function names(snapshot: InputSnapshot | undefined, kind: string): string[] {
  return (snapshot?.resources ?? [])
    .filter((r) => r.kind === kind)
    .map((r) => `${r.metadata.namespace ?? ''}/${r.metadata.name}`);
}

function hasService(provider: KubernetesDiscoveryProvider, name: string): boolean {
  return names(provider.current, 'Service').includes(`bookinfo/${name}`);
}

test('given the objects of examples/cluster-a in the API server, when the provider starts, then its snapshot hash equals the file provider on examples/cluster-a', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  await loadExamples(server);
  const { provider } = await startProvider(t, kubeConfig);
  const { logger } = captureLogger();
  const files = new FileDiscoveryProvider({
    cluster: 'cluster-a',
    manifestsDir: EXAMPLES_CLUSTER_A,
    validate: validateInputResource,
    logger,
    watch: false,
    epoch: 'epoch-1',
  });
  await files.start();
  t.after(() => files.stop());
  assert.ok((files.current?.resources.length ?? 0) > 10, 'the example has resources of every kind');
  assert.deepEqual(files.problems, []);
  assert.deepEqual(provider.problems, []);
  assert.equal(provider.current?.hash, files.current?.hash);
  assert.deepEqual(provider.current?.resources, files.current?.resources);
  assert.equal(provider.current?.generation, 1);
});

test('given a running provider, when a Service is added, then a new snapshot holds it', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews'));
  const { provider, published } = await startProvider(t, kubeConfig);
  server.put(service('ratings'));
  await waitFor(() => hasService(provider, 'ratings'), { timeoutMs: 5000 });
  assert.equal(provider.current?.generation, 2);
  assert.equal(published.length, 2);
});

test('given a running provider, when a Service is modified, then the new spec is the next snapshot', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews', 9080));
  const { provider } = await startProvider(t, kubeConfig);
  const before = provider.current?.hash;
  server.put(service('reviews', 9090));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.notEqual(provider.current?.hash, before);
  const spec = provider.current?.resources[0]?.spec as { ports: Array<{ port: number }> };
  assert.equal(spec.ports[0]?.port, 9090);
});

test('given a running provider, when a Pod is deleted, then it leaves the next snapshot', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(pod('reviews-1', 'node-a1', '10.1.1.11'));
  server.put(pod('reviews-2', 'node-a2', '10.1.2.12'));
  const { provider } = await startProvider(t, kubeConfig);
  assert.deepEqual(names(provider.current, 'Pod'), ['bookinfo/reviews-1', 'bookinfo/reviews-2']);
  server.remove('Pod', 'reviews-2', 'bookinfo');
  await waitFor(() => names(provider.current, 'Pod').length === 1, { timeoutMs: 5000 });
  assert.deepEqual(names(provider.current, 'Pod'), ['bookinfo/reviews-1']);
});

test('given a running provider, when only a status field it ignores changes, then no new generation is published', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const reviews = pod('reviews-1', 'node-a1', '10.1.1.11');
  server.put(reviews);
  const { provider } = await startProvider(t, kubeConfig);
  const notReady: FakeKubeObject = {
    ...reviews,
    status: { ...(reviews['status'] as object), conditions: [{ type: 'Ready', status: 'False' }] },
  };
  server.put(notReady);
  server.put(service('marker'));
  await waitFor(() => hasService(provider, 'marker'), { timeoutMs: 5000 });
  assert.equal(provider.current?.generation, 2, 'the pod condition change alone made no generation');
});

for (const expiredWatchAs of ['event', 'status'] as const) {
  test(`given changes made while the watches were closed and the history compacted (410 as ${expiredWatchAs}), when the watches resume, then the provider relists and loses no update`, async (t) => {
    const { server, kubeConfig } = await startFakeKube(t, { expiredWatchAs });
    server.put(service('reviews'));
    server.put(service('ratings'));
    const { provider } = await startProvider(t, kubeConfig);
    const listsBefore = server.requests.filter((r) => isList(r) && r.path === '/api/v1/services').length;
    // All in one turn of the event loop: the streams are closed before these changes can be sent on them.
    server.closeWatches();
    server.remove('Service', 'ratings', 'bookinfo');
    server.put(service('details'));
    server.compactHistory();
    await waitFor(() => hasService(provider, 'details') && !hasService(provider, 'ratings'), { timeoutMs: 5000 });
    assert.deepEqual(names(provider.current, 'Service'), ['bookinfo/details', 'bookinfo/reviews']);
    assert.ok(
      server.requests.filter((r) => isList(r) && r.path === '/api/v1/services').length > listsBefore,
      'the services were listed again',
    );
    if (expiredWatchAs === 'status')
      assert.ok(server.requests.some((r) => isWatch(r) && r.path === '/api/v1/services' && r.status === 410));
  });
}

test('given the API server failing the first lists with 500, when the provider starts, then it retries and the first snapshot is complete', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews'));
  server.failNext(3, 500, { match: (r) => isList(r) && r.path === '/api/v1/services' });
  const { provider } = await startProvider(t, kubeConfig);
  assert.deepEqual(names(provider.current, 'Service'), ['bookinfo/reviews']);
  assert.equal(server.requests.filter((r) => r.path === '/api/v1/services' && r.status === 500).length, 3);
  assert.deepEqual(provider.problems, []);
});

test('given a running provider whose watches fail with 500 while a Service changes, when the errors stop, then the change arrives', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews', 9080));
  const { provider } = await startProvider(t, kubeConfig);
  server.failNext(3, 500, { match: (r) => r.query['watch'] === 'true' && r.path === '/api/v1/services' });
  server.closeWatches();
  server.put(service('reviews', 9191));
  await waitFor(
    () =>
      (provider.current?.resources[0]?.spec as { ports: Array<{ port: number }> } | undefined)?.ports[0]?.port === 9191,
    { timeoutMs: 5000 },
  );
  assert.equal(server.requests.filter((r) => r.path === '/api/v1/services' && r.status === 500).length, 3);
  await waitFor(() => provider.problems.length === 0, { timeoutMs: 5000 });
});

test('given a Gloo kind whose list answers 404 (CRD missing), when the provider starts, then the kind is reported and skipped, and picked up once it is served', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  await loadExamples(server);
  const vdPath = '/apis/networking.gloo.solo.io/v2/virtualdestinations';
  server.failNext(1, 404, { match: (r) => isList(r) && r.path === vdPath });
  const { provider } = await startProvider(t, kubeConfig, { missingKindRetryMs: 200 });
  assert.deepEqual(names(provider.current, 'VirtualDestination'), []);
  assert.ok(names(provider.current, 'Service').length > 0, 'the other kinds are in the snapshot');
  const problem = provider.problems.find((p) => p.file === vdPath);
  assert.ok(problem, 'the missing kind is reported');
  assert.match(problem.message, /VirtualDestination \(networking\.gloo\.solo\.io\/v2\) is not served.*404/);
  await waitFor(() => names(provider.current, 'VirtualDestination').length === 1, { timeoutMs: 5000 });
  assert.deepEqual(provider.problems, []);
});

test('given an object failing validation, when the provider builds, then it is reported with kind, namespace, name and field and its neighbours still go up', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews'));
  server.put(service('broken', 70_000));
  const { provider } = await startProvider(t, kubeConfig);
  assert.deepEqual(names(provider.current, 'Service'), ['bookinfo/reviews']);
  assert.equal(provider.problems.length, 1);
  const [problem] = provider.problems;
  assert.deepEqual(problem?.object, { apiVersion: 'v1', kind: 'Service', namespace: 'bookinfo', name: 'broken' });
  assert.equal(problem?.file, '/api/v1/namespaces/bookinfo/services/broken');
  assert.match(problem?.path ?? '', /^spec\.ports/);
});

test('given --watch-namespaces, when the provider starts, then only those namespaces (and the cluster-scoped Nodes) are watched', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.put(service('reviews', 9080, 'bookinfo'));
  server.put(service('other', 9080, 'elsewhere'));
  server.put({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a1', labels: { 'topology.kubernetes.io/zone': 'z1' } },
  });
  const { provider } = await startProvider(t, kubeConfig, { namespaces: ['bookinfo'] });
  assert.deepEqual(names(provider.current, 'Service'), ['bookinfo/reviews']);
  assert.deepEqual(names(provider.current, 'Node'), ['/node-a1']);
  assert.ok(server.requests.some((r) => r.path === '/api/v1/namespaces/bookinfo/services'));
  assert.ok(!server.requests.some((r) => r.path === '/api/v1/services'));
});

test('given an API server that never answers a list, when the provider starts, then start fails with UNAVAILABLE naming the kind', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.failNext(1_000, 503, { match: (r) => r.path === '/api/v1/pods' });
  const { logger } = captureLogger();
  const provider = new KubernetesDiscoveryProvider({
    cluster: 'cluster-a',
    kubeConfig,
    validate: validateInputResource,
    logger,
    backoff: FAST_BACKOFF,
    syncTimeoutMs: 300,
  });
  t.after(() => provider.stop());
  await assert.rejects(
    provider.start(),
    (err: unknown) =>
      err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_UNAVAILABLE' && err.message.includes('/api/v1/pods'),
  );
  assert.equal(provider.current, undefined);
});

test('given a provider still waiting for its first lists, when it is stopped, then start rejects at once and no watch stays open', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  server.failNext(1_000, 503, { match: (r) => r.path === '/api/v1/pods' });
  const { logger } = captureLogger();
  const provider = new KubernetesDiscoveryProvider({
    cluster: 'cluster-a',
    kubeConfig,
    validate: validateInputResource,
    logger,
    backoff: FAST_BACKOFF,
  });
  const starting = provider.start();
  await waitFor(() => server.requests.some((r) => r.path === '/api/v1/pods' && r.status === 503), { timeoutMs: 5000 });
  await provider.stop();
  await assert.rejects(
    starting,
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_UNAVAILABLE',
  );
  await waitFor(() => server.openWatchCount === 0, { timeoutMs: 5000 });
});
