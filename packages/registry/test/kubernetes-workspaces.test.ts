// Workspace CRs followed from the fake kube-apiserver (a test double from @meshrelay/testkit),
// through the real @kubernetes/client-node: created, changed, deleted, invalid, across a 410.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import { startKubernetesWorkspaces, type WorkspaceSource } from '../src/kubernetes-workspaces.ts';
import { NS, kubeConfigOf, startFakeKube } from './kube-harness.ts';

const TIMEOUT = { timeout: 60_000 };

function workspace(
  name: string,
  namespaces: unknown = [{ name }],
): { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: unknown } {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: NS },
    spec: { workloadClusters: [{ name: 'cluster-*', namespaces }] },
  };
}

async function startWorkspaces(
  t: TestContext,
  fake: FakeKubeApiServer,
  initialSyncTimeoutMs?: number,
): Promise<WorkspaceSource> {
  const source = await startKubernetesWorkspaces({
    kubeConfig: kubeConfigOf(fake),
    namespace: NS,
    logger: pino({ level: 'silent' }),
    retryBaseMs: 20,
    retryMaxMs: 200,
    ...(initialSyncTimeoutMs !== undefined ? { initialSyncTimeoutMs } : {}),
  });
  t.after(() => source.close());
  return source;
}

const names = (source: WorkspaceSource): string[] => source.list().map((w) => w.metadata.name);
const namespacesOf = (source: WorkspaceSource, name: string): unknown =>
  (
    source.list().find((w) => w.metadata.name === name)?.spec as
      { workloadClusters: { namespaces: unknown }[] } | undefined
  )?.workloadClusters[0]?.namespaces;

test(
  'given Workspace CRs in the management namespace, when the source starts, then they are in force without status or server metadata',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspace('web'));
    fake.put(workspace('bookinfo'));
    fake.put({ ...workspace('elsewhere'), metadata: { name: 'elsewhere', namespace: 'default' } });
    const source = await startWorkspaces(t, fake);
    assert.deepEqual(names(source), ['bookinfo', 'web']);
    assert.deepEqual(source.list()[0], {
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'Workspace',
      metadata: { name: 'bookinfo', namespace: NS },
      spec: workspace('bookinfo').spec,
    });
    assert.deepEqual(source.problems(), []);
  },
);

test(
  'given a running source, when a Workspace is created, changed and deleted, then each change is reported and in force',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    const source = await startWorkspaces(t, fake);
    let changes = 0;
    source.onChange(() => changes++);
    assert.deepEqual(names(source), []);
    fake.put(workspace('web'));
    await waitFor(() => names(source).includes('web'), { message: 'the created Workspace' });
    const before = source.list();
    fake.put(workspace('web', [{ name: 'web' }, { name: 'web-canary' }]));
    await waitFor(() => JSON.stringify(namespacesOf(source, 'web')).includes('web-canary'), {
      message: 'the changed Workspace',
    });
    assert.notEqual(source.list(), before, 'a change gives a new list');
    fake.remove('Workspace', 'web', NS);
    await waitFor(() => names(source).length === 0, { message: 'the deleted Workspace gone' });
    assert.equal(changes, 3);
  },
);

test(
  'given a valid Workspace, when it is changed to an invalid one, then the problem names the object and field and the previous version stays in force',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspace('web'));
    const source = await startWorkspaces(t, fake);
    const good = source.list();
    fake.put({ ...workspace('web'), spec: { workloadClusters: [{ name: 7, namespaces: [{ name: 'web' }] }] } });
    fake.put({ ...workspace('fresh'), spec: { workloadCluster: [] } });
    await waitFor(() => source.problems().length === 2, { message: `problems: ${JSON.stringify(source.problems())}` });
    const [fresh, web] = source.problems();
    assert.match(
      web ?? '',
      /^Workspace gloo-mesh\/web: spec\.workloadClusters\[0\]\.name: .*; the previous valid version stays in force$/,
    );
    assert.match(
      fresh ?? '',
      /^Workspace gloo-mesh\/fresh: spec.*workloadCluster.*; not in force \(it never was valid\)$/,
    );
    assert.equal(source.list(), good, 'the list in force is the previous one');

    fake.put(workspace('web', [{ name: 'web-2' }]));
    await waitFor(
      () => source.problems().length === 1 && JSON.stringify(namespacesOf(source, 'web')).includes('web-2'),
      { message: 'the fixed Workspace in force' },
    );
  },
);

test(
  'given a dropped watch and a compacted history, when the source lists again, then a change and a deletion made meanwhile are in force',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspace('web'));
    fake.put(workspace('bookinfo'));
    const source = await startWorkspaces(t, fake);
    await waitFor(() => fake.openWatchCount === 1);
    const seen: string[][] = [];
    source.onChange(() => seen.push(names(source)));
    fake.closeWatches();
    fake.put(workspace('web', [{ name: 'web-2' }]));
    fake.remove('Workspace', 'bookinfo', NS);
    fake.compactHistory();
    await waitFor(
      () => names(source).join() === 'web' && JSON.stringify(namespacesOf(source, 'web')).includes('web-2'),
      {
        message: `after the 410: ${JSON.stringify(source.list())}`,
      },
    );
    assert.deepEqual(seen, [['web']], 'the new list is applied at once, never half');
  },
);

test(
  'given list errors, when the watch breaks, then the source backs off, recovers and sees later changes',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    const source = await startWorkspaces(t, fake);
    await waitFor(() => fake.openWatchCount === 1);
    fake.failNext(3, 500, { match: (r) => r.method === 'GET' && r.path.endsWith('/workspaces') });
    fake.closeWatches();
    fake.compactHistory();
    fake.put(workspace('web'));
    await waitFor(() => names(source).includes('web'), { message: 'the source never recovered' });
    assert.equal(fake.requests.filter((r) => r.status === 500).length, 3);
  },
);

test(
  'given an API that answers no list, when the source starts, then it fails with UNAVAILABLE instead of starting with no Workspaces',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.failNext(1000, 503, { match: (r) => r.path.endsWith('/workspaces') });
    await assert.rejects(
      startWorkspaces(t, fake, 300),
      (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_UNAVAILABLE',
    );
  },
);

test(
  'given the Workspace kind not served (404), when the source starts, then there are none, and CRs served later are picked up',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.failNext(3, 404, { match: (r) => r.method === 'GET' && r.path.endsWith('/workspaces') });
    fake.put(workspace('web'));
    const source = await startWorkspaces(t, fake);
    assert.deepEqual(names(source), []);
    await waitFor(() => names(source).includes('web'), { message: 'the Workspace once the kind is served' });
  },
);
