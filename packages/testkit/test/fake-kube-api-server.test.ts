// The fake kube-apiserver driven through the real @kubernetes/client-node, so that the behaviours
// other packages rely on (CRUD, 409s, list+watch, 410, server-side apply, /status) are checked with
// the client those packages use.

import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
  type KubernetesObject,
  type V1Secret,
} from '@kubernetes/client-node';
import {
  startFakeKubeApiServer,
  waitFor,
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
} from '../src/index.ts';

const NS = 'gloo-mesh';
const GLOO = { group: 'admin.gloo.solo.io', version: 'v2', plural: 'kubernetesclusters' } as const;

async function serverFor(t: TestContext, options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
  const server = await startFakeKubeApiServer(options);
  t.after(() => server.stop());
  return server;
}

function kubeConfigFor(server: FakeKubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions(server.kubeConfigOptions());
  return kc;
}

async function apiError(promise: Promise<unknown>): Promise<ApiException<unknown>> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiException) return err as ApiException<unknown>;
    throw err;
  }
  assert.fail('expected the API call to fail');
}

function statusBody(err: ApiException<unknown>): { code: number; reason: string } {
  return (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { code: number; reason: string };
}

function secret(name: string, labels: Record<string, string> = {}): V1Secret {
  return {
    metadata: { name, namespace: NS, labels },
    type: 'Opaque',
    stringData: undefined,
    data: { k: Buffer.from('v').toString('base64') },
  };
}

interface ClusterCr {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: { clusterDomain: string; skipWarming: boolean };
}

function cluster(name: string, skipWarming = false): ClusterCr {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: { name, namespace: NS },
    spec: { clusterDomain: 'cluster.local', skipWarming },
  };
}

test('given a Secret, when it is created, read, replaced and deleted, then the server fills and bumps metadata', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  const created = await core.createNamespacedSecret({ namespace: NS, body: secret('a') });
  assert.match(created.metadata?.uid ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(created.metadata?.creationTimestamp);
  assert.equal(created.metadata?.generation, 1);
  const read = await core.readNamespacedSecret({ name: 'a', namespace: NS });
  assert.equal(read.metadata?.resourceVersion, created.metadata?.resourceVersion);
  read.data = { k: Buffer.from('w').toString('base64') };
  const replaced = await core.replaceNamespacedSecret({ name: 'a', namespace: NS, body: read });
  assert.ok(Number(replaced.metadata?.resourceVersion) > Number(created.metadata?.resourceVersion));
  await core.deleteNamespacedSecret({ name: 'a', namespace: NS });
  const missing = await apiError(core.readNamespacedSecret({ name: 'a', namespace: NS }));
  assert.equal(missing.code, 404);
  assert.equal((await apiError(core.deleteNamespacedSecret({ name: 'a', namespace: NS }))).code, 404);
});

test('given an existing Secret, when one with the same name is created, then the server answers 409 AlreadyExists', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: NS, body: secret('a') });
  const err = await apiError(core.createNamespacedSecret({ namespace: NS, body: secret('a') }));
  assert.equal(err.code, 409);
  assert.equal(statusBody(err).reason, 'AlreadyExists');
});

test('given two writers of one Lease, when the second replaces with a stale resourceVersion, then it gets 409 Conflict', async (t) => {
  const server = await serverFor(t);
  const leases = kubeConfigFor(server).makeApiClient(CoordinationV1Api);
  const lease = await leases.createNamespacedLease({
    namespace: NS,
    body: { metadata: { name: 'l' }, spec: { holderIdentity: 'a' } },
  });
  const first = structuredClone(lease);
  first.spec!.holderIdentity = 'b';
  await leases.replaceNamespacedLease({ name: 'l', namespace: NS, body: first });
  lease.spec!.holderIdentity = 'c';
  const err = await apiError(leases.replaceNamespacedLease({ name: 'l', namespace: NS, body: lease }));
  assert.equal(err.code, 409);
  assert.equal(statusBody(err).reason, 'Conflict');
  assert.equal((await leases.readNamespacedLease({ name: 'l', namespace: NS })).spec?.holderIdentity, 'b');
});

test('given a custom resource, when it is replaced without a resourceVersion, then the server answers 422 as for CRDs', async (t) => {
  const server = await serverFor(t);
  const custom = kubeConfigFor(server).makeApiClient(CustomObjectsApi);
  await custom.createNamespacedCustomObject({ ...GLOO, namespace: NS, body: cluster('c1') });
  const err = await apiError(
    custom.replaceNamespacedCustomObject({ ...GLOO, namespace: NS, name: 'c1', body: cluster('c1', true) }),
  );
  assert.equal(err.code, 422);
});

test('given no such namespace, when an object is created in it, then the server answers 404', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  const err = await apiError(core.createNamespacedSecret({ namespace: 'nowhere', body: { metadata: { name: 'a' } } }));
  assert.equal(err.code, 404);
});

test('given labelled Secrets, when listed with selectors and a limit, then only matching items come back, page by page', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: NS, body: secret('a', { app: 'x', tier: 'web' }) });
  await core.createNamespacedSecret({ namespace: NS, body: secret('b', { app: 'y' }) });
  await core.createNamespacedSecret({ namespace: NS, body: secret('c', { app: 'z', tier: 'db' }) });
  const names = (list: { items: V1Secret[] }): string[] => list.items.map((s) => s.metadata?.name ?? '');
  assert.deepEqual(names(await core.listNamespacedSecret({ namespace: NS, labelSelector: 'app=x' })), ['a']);
  assert.deepEqual(names(await core.listNamespacedSecret({ namespace: NS, labelSelector: 'app in (x,z)' })), [
    'a',
    'c',
  ]);
  assert.deepEqual(names(await core.listNamespacedSecret({ namespace: NS, labelSelector: 'tier,app!=x' })), ['c']);
  assert.deepEqual(names(await core.listNamespacedSecret({ namespace: NS, labelSelector: '!tier' })), ['b']);
  assert.deepEqual(names(await core.listSecretForAllNamespaces({ fieldSelector: 'metadata.name=b' })), ['b']);
  const page1 = await core.listNamespacedSecret({ namespace: NS, limit: 2 });
  assert.deepEqual(names(page1), ['a', 'b']);
  const page2 = await core.listNamespacedSecret({ namespace: NS, limit: 2, _continue: page1.metadata?._continue });
  assert.deepEqual(names(page2), ['c']);
  assert.equal(page2.metadata?._continue, undefined);
});

test('given an informer on KubernetesClusters, when CRs are added, modified and deleted, then it hears each event', async (t) => {
  const server = await serverFor(t);
  const kc = kubeConfigFor(server);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const path = `/apis/${GLOO.group}/${GLOO.version}/namespaces/${NS}/${GLOO.plural}`;
  const informer = makeInformer<KubernetesObject>(kc, path, () =>
    custom.listNamespacedCustomObject({ ...GLOO, namespace: NS }),
  );
  const seen: string[] = [];
  informer.on('add', (o) => seen.push(`add:${o.metadata?.name}`));
  informer.on('update', (o) => seen.push(`update:${o.metadata?.name}`));
  informer.on('delete', (o) => seen.push(`delete:${o.metadata?.name}`));
  server.put(cluster('before'));
  await informer.start();
  t.after(() => informer.stop());
  await custom.createNamespacedCustomObject({ ...GLOO, namespace: NS, body: cluster('c1') });
  await custom.patchNamespacedCustomObject(
    { ...GLOO, namespace: NS, name: 'c1', body: { spec: { skipWarming: true } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await custom.deleteNamespacedCustomObject({ ...GLOO, namespace: NS, name: 'c1' });
  await waitFor(() => seen.length === 4, { message: `informer saw ${JSON.stringify(seen)}` });
  assert.deepEqual(seen, ['add:before', 'add:c1', 'update:c1', 'delete:c1']);
});

test('given a compacted history, when a watch starts from an old resourceVersion, then it gets a 410 Expired Status', async (t) => {
  const server = await serverFor(t);
  const rv = String(server.resourceVersion);
  server.put(cluster('c1'));
  server.compactHistory();
  const events: Array<{ type: string; object: { code?: number; reason?: string } }> = [];
  let ended = false;
  const path = `/apis/${GLOO.group}/${GLOO.version}/namespaces/${NS}/${GLOO.plural}`;
  await new Watch(kubeConfigFor(server)).watch(
    path,
    { resourceVersion: rv },
    (type, object) => events.push({ type, object }),
    () => {
      ended = true;
    },
  );
  await waitFor(() => ended);
  assert.deepEqual(
    events.map((e) => [e.type, e.object.code, e.object.reason]),
    [['ERROR', 410, 'Expired']],
  );
});

test('given expiredWatchAs status, when a watch starts from a forgotten resourceVersion, then the HTTP status is 410', async (t) => {
  const server = await serverFor(t, { historySize: 2, expiredWatchAs: 'status' });
  const rv = String(server.resourceVersion);
  for (const name of ['a', 'b', 'c']) server.put(cluster(name));
  let error: { statusCode?: number } | undefined;
  const watcher = new Watch(kubeConfigFor(server));
  await watcher.watch(
    `/apis/${GLOO.group}/${GLOO.version}/${GLOO.plural}`,
    { resourceVersion: rv },
    () => {},
    (err: unknown) => {
      error = err as { statusCode?: number };
    },
  );
  await waitFor(() => error !== undefined);
  assert.equal(error?.statusCode, 410);
});

test('given an informer, when its watch is dropped and history compacted meanwhile, then it relists and misses no change', async (t) => {
  const server = await serverFor(t);
  const kc = kubeConfigFor(server);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const path = `/apis/${GLOO.group}/${GLOO.version}/namespaces/${NS}/${GLOO.plural}`;
  const informer = makeInformer<KubernetesObject>(kc, path, () =>
    custom.listNamespacedCustomObject({ ...GLOO, namespace: NS }),
  );
  await informer.start();
  t.after(() => informer.stop());
  await waitFor(() => server.openWatchCount === 1);
  const lists = server.requests.filter((r) => r.method === 'GET' && r.query.watch === undefined).length;
  server.closeWatches();
  server.put(cluster('during-outage'));
  server.compactHistory();
  await waitFor(() => informer.get('during-outage', NS) !== undefined, { message: 'informer never saw the object' });
  const relists = server.requests.filter((r) => r.method === 'GET' && r.query.watch === undefined).length - lists;
  assert.ok(relists >= 1, 'the informer relisted after 410');
});

test('given server-side apply, when an object is applied twice by one manager, then it is created, updated and shrunk', async (t) => {
  const server = await serverFor(t);
  const objects = KubernetesObjectApi.makeApiClient(kubeConfigFor(server));
  const first: KubernetesObject & { data: Record<string, string> } = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: NS },
    data: { a: '1', b: '2' },
  };
  const created = await objects.patch(first, undefined, undefined, 'meshrelay', true, PatchStrategy.ServerSideApply);
  assert.deepEqual((created as { data?: unknown }).data, { a: '1', b: '2' });
  const second = { ...first, data: { a: '3' } };
  const updated = await objects.patch(second, undefined, undefined, 'meshrelay', true, PatchStrategy.ServerSideApply);
  assert.deepEqual((updated as { data?: unknown }).data, { a: '3' });
  assert.deepEqual(
    updated.metadata?.managedFields?.map((f) => [f.manager, f.operation]),
    [['meshrelay', 'Apply']],
  );
  assert.equal(updated.metadata?.uid, created.metadata?.uid);
});

test('given server-side apply without a field manager, when it is sent, then the server rejects it', async (t) => {
  const server = await serverFor(t);
  const objects = KubernetesObjectApi.makeApiClient(kubeConfigFor(server));
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: NS }, data: { a: '1' } };
  const err = await apiError(
    objects.patch(cm, undefined, undefined, undefined, undefined, PatchStrategy.ServerSideApply),
  );
  assert.equal(err.code, 422);
});

test('given a kind with a status subresource, when spec and status are written, then each endpoint touches only its part', async (t) => {
  const server = await serverFor(t);
  const custom = kubeConfigFor(server).makeApiClient(CustomObjectsApi);
  const withStatus = { ...cluster('c1'), status: { conditions: [{ type: 'ClusterWarm', status: 'True' }] } };
  const created = (await custom.createNamespacedCustomObject({
    ...GLOO,
    namespace: NS,
    body: withStatus,
  })) as KubernetesObject & { status?: unknown };
  assert.equal(created.status, undefined, 'status is dropped on create');
  const statusPatch = { status: { conditions: [{ type: 'ClusterWarm', status: 'False' }] } };
  const patched = (await custom.patchNamespacedCustomObjectStatus(
    { ...GLOO, namespace: NS, name: 'c1', body: statusPatch },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )) as KubernetesObject & { status?: unknown };
  assert.deepEqual(patched.status, statusPatch.status);
  assert.equal(patched.metadata?.generation, 1, 'a status write does not bump generation');
  const replaced = (await custom.replaceNamespacedCustomObject({
    ...GLOO,
    namespace: NS,
    name: 'c1',
    body: { ...cluster('c1', true), metadata: { ...patched.metadata }, status: { conditions: [] } },
  })) as KubernetesObject & { status?: unknown; spec?: { skipWarming?: boolean } };
  assert.deepEqual(replaced.status, statusPatch.status, 'the main endpoint ignores status');
  assert.equal(replaced.spec?.skipWarming, true);
  assert.equal(replaced.metadata?.generation, 2);
});

test('given a JSON patch with a failing test operation, when it is sent, then nothing changes', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  const created = await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'cm' }, data: { a: '1' } },
  });
  const ok = await core.patchNamespacedConfigMap({
    name: 'cm',
    namespace: NS,
    body: [
      { op: 'test', path: '/data/a', value: '1' },
      { op: 'add', path: '/data/b', value: '2' },
    ],
  });
  assert.deepEqual(ok.data, { a: '1', b: '2' });
  const err = await apiError(
    core.patchNamespacedConfigMap({
      name: 'cm',
      namespace: NS,
      body: [
        { op: 'test', path: '/data/a', value: 'x' },
        { op: 'remove', path: '/data/a' },
      ],
    }),
  );
  assert.equal(err.code, 422);
  assert.notEqual(ok.metadata?.resourceVersion, created.metadata?.resourceVersion);
  assert.deepEqual((await core.readNamespacedConfigMap({ name: 'cm', namespace: NS })).data, { a: '1', b: '2' });
});

test('given an unchanged object, when it is replaced as is, then the resourceVersion stays and no event is sent', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  const created = await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'cm' }, data: { a: '1' } },
  });
  const before = server.resourceVersion;
  const replaced = await core.replaceNamespacedConfigMap({ name: 'cm', namespace: NS, body: created });
  assert.equal(replaced.metadata?.resourceVersion, created.metadata?.resourceVersion);
  assert.equal(server.resourceVersion, before);
});

test('given injected failures, when requests are made, then the next n answer that status and later ones succeed', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  server.failNext(1, 500);
  server.failNext(1, 429, { retryAfterSeconds: 2 });
  assert.equal((await apiError(core.listNamespacedSecret({ namespace: NS }))).code, 500);
  const throttled = await apiError(core.listNamespacedSecret({ namespace: NS }));
  assert.equal(throttled.code, 429);
  assert.equal(statusBody(throttled).reason, 'TooManyRequests');
  assert.equal((await core.listNamespacedSecret({ namespace: NS })).items.length, 0);
  assert.deepEqual(
    server.requests.map((r) => r.status),
    [500, 429, 200],
  );
});

test('given a Secret owned by a custom resource, when the owner is deleted, then the Secret is garbage collected', async (t) => {
  const server = await serverFor(t);
  const kc = kubeConfigFor(server);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const owner = (await custom.createNamespacedCustomObject({
    ...GLOO,
    namespace: NS,
    body: cluster('c1'),
  })) as KubernetesObject;
  const ownerReferences = [
    { apiVersion: 'admin.gloo.solo.io/v2', kind: 'KubernetesCluster', name: 'c1', uid: owner.metadata!.uid! },
  ];
  await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 's', ownerReferences } } });
  await custom.deleteNamespacedCustomObject({ ...GLOO, namespace: NS, name: 'c1' });
  assert.equal(server.get('Secret', 's', NS), undefined);
});

test('given an object with a finalizer, when it is deleted, then it is only marked until the finalizer is removed', async (t) => {
  const server = await serverFor(t);
  const core = kubeConfigFor(server).makeApiClient(CoreV1Api);
  await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'cm', finalizers: ['x/y'] } } });
  await core.deleteNamespacedConfigMap({ name: 'cm', namespace: NS });
  const marked = await core.readNamespacedConfigMap({ name: 'cm', namespace: NS });
  assert.ok(marked.metadata?.deletionTimestamp);
  marked.metadata!.finalizers = [];
  await core.replaceNamespacedConfigMap({ name: 'cm', namespace: NS, body: marked });
  assert.equal((await apiError(core.readNamespacedConfigMap({ name: 'cm', namespace: NS }))).code, 404);
});

test('given the kubeconfig YAML, when a client loads it, then it reaches the server and lists cluster-scoped namespaces', async (t) => {
  const server = await serverFor(t, { namespaces: ['one', 'two'] });
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeConfigYaml());
  const names = (await kc.makeApiClient(CoreV1Api).listNamespace()).items.map((n) => n.metadata?.name);
  assert.deepEqual(names, ['one', 'two']);
});

test('given a watch with a label selector, when an object gains and loses the label, then it sees ADDED and DELETED', async (t) => {
  const server = await serverFor(t);
  const events: string[] = [];
  const controller = await new Watch(kubeConfigFor(server)).watch(
    '/api/v1/configmaps',
    { labelSelector: 'app=x', resourceVersion: String(server.resourceVersion) },
    (type, object: KubernetesObject) => events.push(`${type}:${object.metadata?.name}`),
    () => {},
  );
  t.after(() => controller.abort());
  server.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: NS } });
  server.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: NS, labels: { app: 'x' } } });
  server.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: NS, labels: { app: 'x', v: '2' } },
  });
  server.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: NS } });
  await waitFor(() => events.length === 3, { message: `watch saw ${JSON.stringify(events)}` });
  assert.deepEqual(events, ['ADDED:cm', 'MODIFIED:cm', 'DELETED:cm']);
});

test('given ConfigMap data over 1 MiB, when created or replaced, then the server refuses it with 422 Invalid as kube-apiserver does', async (t) => {
  const core = kubeConfigFor(await serverFor(t)).makeApiClient(CoreV1Api);
  const body = (bytes: number) => ({
    metadata: { name: 'big', namespace: NS },
    binaryData: { part: Buffer.alloc(bytes).toString('base64') },
  });
  const created = await apiError(core.createNamespacedConfigMap({ namespace: NS, body: body(1024 * 1024) }));
  assert.equal(created.code, 422);
  assert.match(JSON.stringify(statusBody(created)), /Too long: must have at most 1048576 bytes/);
  await core.createNamespacedConfigMap({ namespace: NS, body: body(1000 * 1024) });
  const replaced = await apiError(
    core.replaceNamespacedConfigMap({ name: 'big', namespace: NS, body: body(1024 * 1024) }),
  );
  assert.equal(replaced.code, 422);
});
