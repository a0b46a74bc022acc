import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { parse } from 'yaml';
import { statusFixture } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import { FileStatusWriter, STATUS_DIR } from '../src/status/file-status-writer.ts';
import { ManifestGenerations } from '../src/discovery/manifest-generations.ts';
import { KubernetesStatusWriter } from '../src/status/kubernetes-status-writer.ts';
import { reportedStatusesOf, withObservedGeneration, type ReportedStatus } from '../src/status/resource-status.ts';
import { captureLogger } from './support/fixtures.ts';
import { startFakeKube } from './support/kube.ts';

const invalidPolicy: ReportedStatus = {
  apiVersion: 'security.policy.gloo.solo.io/v2',
  kind: 'AccessPolicy',
  namespace: 'bookinfo',
  name: 'reviews-lockdown',
  state: { observedGeneration: 0, approval: 'INVALID', message: 'spec.config.enforcementLayers: not supported' },
  clusters: {
    'cluster-a': {
      observedGeneration: 0,
      approval: 'INVALID',
      message: 'spec.config.enforcementLayers: not supported',
    },
  },
};

const acceptedRoute: ReportedStatus = {
  apiVersion: 'networking.gloo.solo.io/v2',
  kind: 'RouteTable',
  namespace: 'bookinfo',
  name: 'reviews-route',
  state: { observedGeneration: 0, approval: 'ACCEPTED', message: '' },
  clusters: { 'cluster-a': { observedGeneration: 0, approval: 'ACCEPTED', message: '' } },
};

/** A manifests directory holding statusFixture() as one JSON-in-YAML document per file. */
async function manifestsDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'meshrelay-status-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const r of statusFixture())
    await writeFile(path.join(dir, `${r.kind.toLowerCase()}-${r.metadata.name}.yaml`), JSON.stringify(r));
  return dir;
}

test('given a status directory of its own, when the file writer writes, then the files are there and the manifests dir is untouched', async (t) => {
  const dir = await manifestsDir(t);
  const statusDir = path.join(await mkdtemp(path.join(tmpdir(), 'meshrelay-status-dir-')), 'status');
  t.after(() => rm(path.dirname(statusDir), { recursive: true, force: true }));
  const before = (await readdir(dir)).sort();
  const writer = new FileStatusWriter({ manifestsDir: dir, statusDir, logger: captureLogger().logger });

  await writer.write([invalidPolicy, acceptedRoute]);

  assert.equal(writer.directory, statusDir);
  assert.deepEqual((await readdir(statusDir)).sort(), [
    'AccessPolicy.bookinfo.reviews-lockdown.yaml',
    'RouteTable.bookinfo.reviews-route.yaml',
  ]);
  assert.deepEqual((await readdir(dir)).sort(), before);
});

test('given reported statuses, when the file writer writes them, then one status file per resource holds its approval and message but not its spec', async (t) => {
  const dir = await manifestsDir(t);
  const writer = new FileStatusWriter({ manifestsDir: dir, logger: captureLogger().logger });
  await writer.write([invalidPolicy, acceptedRoute]);
  const files = (await readdir(path.join(dir, STATUS_DIR))).sort();
  assert.deepEqual(files, ['AccessPolicy.bookinfo.reviews-lockdown.yaml', 'RouteTable.bookinfo.reviews-route.yaml']);
  const doc = parse(await readFile(path.join(dir, STATUS_DIR, files[0] ?? ''), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(doc, {
    apiVersion: invalidPolicy.apiVersion,
    kind: 'AccessPolicy',
    metadata: { name: 'reviews-lockdown', namespace: 'bookinfo' },
    status: {
      state: { ...invalidPolicy.state, observedGeneration: 1 },
      clusters: { 'cluster-a': { ...invalidPolicy.state, observedGeneration: 1 } },
    },
  });
});

test('given one manifest that sets metadata.generation 7 and one that sets none, when the file provider reads them and the file writer writes their statuses, then observedGeneration is 7 and 1', async (t) => {
  const dir = await manifestsDir(t);
  const [, route] = statusFixture();
  await writeFile(
    path.join(dir, 'routetable-reviews-route.yaml'),
    JSON.stringify({ ...route, metadata: { ...route?.metadata, generation: 7 } }),
  );
  const generations = new ManifestGenerations();
  const provider = new FileDiscoveryProvider({
    cluster: 'cluster-a',
    manifestsDir: dir,
    validate: validateInputResource,
    logger: captureLogger().logger,
    watch: false,
    epoch: 'e',
    generations,
  });
  await provider.start();
  await provider.stop();
  await new FileStatusWriter({ manifestsDir: dir, logger: captureLogger().logger, generations }).write([
    invalidPolicy,
    acceptedRoute,
  ]);
  const observed = async (file: string) => {
    const doc = parse(await readFile(path.join(dir, STATUS_DIR, file), 'utf8')) as {
      status: { state: { observedGeneration: number }; clusters: Record<string, { observedGeneration: number }> };
    };
    return [
      doc.status.state.observedGeneration,
      ...Object.values(doc.status.clusters).map((c) => c.observedGeneration),
    ];
  };
  assert.deepEqual(await observed('RouteTable.bookinfo.reviews-route.yaml'), [7, 7]);
  assert.deepEqual(await observed('AccessPolicy.bookinfo.reviews-lockdown.yaml'), [1, 1]);
});

test('given written status files, when a later report leaves a resource out, then its file is removed and no temporary file stays', async (t) => {
  const dir = await manifestsDir(t);
  const writer = new FileStatusWriter({ manifestsDir: dir, logger: captureLogger().logger });
  await writer.write([invalidPolicy, acceptedRoute]);
  await writer.write([acceptedRoute]);
  assert.deepEqual(await readdir(path.join(dir, STATUS_DIR)), ['RouteTable.bookinfo.reviews-route.yaml']);
});

test('given status files beside the manifests, when the file provider reads the directory, then the snapshot is the same as without them', async (t) => {
  const dir = await manifestsDir(t);
  const read = async () => {
    const provider = new FileDiscoveryProvider({
      cluster: 'cluster-a',
      manifestsDir: dir,
      validate: validateInputResource,
      logger: captureLogger().logger,
      watch: false,
      epoch: 'e',
    });
    await provider.start();
    await provider.stop();
    return { hash: provider.current?.hash, problems: provider.problems };
  };
  const before = await read();
  await new FileStatusWriter({ manifestsDir: dir, logger: captureLogger().logger }).write([
    invalidPolicy,
    acceptedRoute,
  ]);
  assert.deepEqual(await read(), before);
});

test('given a status report off the wire, when converted, then numbers, approvals and per-cluster results survive', () => {
  const [status] = reportedStatusesOf({
    statuses: [
      {
        ...invalidPolicy,
        state: { ...invalidPolicy.state, observedGeneration: 3 },
        clusters: { ...invalidPolicy.clusters },
      },
    ],
  });
  assert.equal(status?.state.observedGeneration, 3);
  assert.equal(status?.state.approval, 'INVALID');
  assert.deepEqual(Object.keys(status?.clusters ?? {}), ['cluster-a']);
});

test('given Gloo resources in the API server, when the kubernetes writer writes their statuses, then status.state and per-cluster results are set through the status subresource and spec is untouched', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route, policy] = statusFixture();
  server.put(route as never);
  server.put(policy as never);
  const writer = new KubernetesStatusWriter({ kubeConfig, logger: captureLogger().logger });
  await writer.write([invalidPolicy, acceptedRoute]);
  const written = server.get('accesspolicies.security.policy.gloo.solo.io', 'reviews-lockdown', 'bookinfo');
  const observed = withObservedGeneration(invalidPolicy, 1);
  assert.deepEqual(written?.['status'], { state: observed.state, clusters: observed.clusters });
  assert.deepEqual(written?.['spec'], policy?.spec);
  const routeStatus = server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo')?.['status'] as {
    state: { approval: string };
  };
  assert.equal(routeStatus.state.approval, 'ACCEPTED');
});

test('given a RouteTable at generation 3 in the API server, when the kubernetes writer writes its status, then the state and every per-cluster result carry observedGeneration 3', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route] = statusFixture();
  for (let i = 0; i < 3; i++) server.put(route as never);
  const twoClusters = { ...acceptedRoute, clusters: { ...acceptedRoute.clusters, 'cluster-b': acceptedRoute.state } };
  await new KubernetesStatusWriter({ kubeConfig, logger: captureLogger().logger }).write([twoClusters]);
  const written = server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo');
  assert.equal((written?.['metadata'] as { generation?: number }).generation, 3);
  const status = written?.['status'] as {
    state: { observedGeneration: number };
    clusters: Record<string, { observedGeneration: number }>;
  };
  assert.equal(status.state.observedGeneration, 3);
  assert.deepEqual(
    Object.values(status.clusters).map((c) => c.observedGeneration),
    [3, 3],
  );
});

test('given a written status, when the object changes and the same report is written again, then observedGeneration follows the new generation', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route] = statusFixture();
  server.put(route as never);
  const writer = new KubernetesStatusWriter({ kubeConfig, logger: captureLogger().logger });
  await writer.write([acceptedRoute]);
  server.put(route as never);
  await writer.write([acceptedRoute]);
  const status = server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo')?.['status'] as {
    state: { observedGeneration: number; approval: string };
  };
  assert.deepEqual([status.state.observedGeneration, status.state.approval], [2, 'ACCEPTED']);
});

test("given an object that changes between the writer's read and its patch, when the status is written, then the stale patch is refused and redone against the new generation", async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route] = statusFixture();
  server.put(route as never);
  let changed = false;
  // Never fails a request: the first PATCH's arrival is used to change the object under the writer.
  server.failNext(1, 500, {
    match: (request) => {
      if (request.method === 'PATCH' && !changed) {
        changed = true;
        server.put(route as never);
      }
      return false;
    },
  });
  await new KubernetesStatusWriter({ kubeConfig, logger: captureLogger().logger }).write([acceptedRoute]);
  const patches = server.requests.filter((r) => r.method === 'PATCH').map((r) => r.status);
  assert.deepEqual(patches, [409, 200]);
  const status = server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo')?.['status'] as {
    state: { observedGeneration: number };
  };
  assert.equal(status.state.observedGeneration, 2);
});

test('given a written status, when a consuming cluster drops out of the next report, then its per-cluster result is removed', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route] = statusFixture();
  server.put(route as never);
  const writer = new KubernetesStatusWriter({ kubeConfig, logger: captureLogger().logger });
  const twoClusters = { ...acceptedRoute, clusters: { ...acceptedRoute.clusters, 'cluster-b': acceptedRoute.state } };
  await writer.write([twoClusters]);
  await writer.write([acceptedRoute]);
  const status = server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo')?.['status'] as {
    clusters: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(status.clusters), ['cluster-a']);
});

test('given a resource deleted before its status is written, when the kubernetes writer writes, then the others are still written', async (t) => {
  const { server, kubeConfig } = await startFakeKube(t);
  const [, route] = statusFixture();
  server.put(route as never);
  const { logger, lines } = captureLogger();
  await new KubernetesStatusWriter({ kubeConfig, logger }).write([invalidPolicy, acceptedRoute]);
  assert.ok(server.get('routetables.networking.gloo.solo.io', 'reviews-route', 'bookinfo')?.['status']);
  assert.ok(
    lines.some(
      (l) =>
        l['msg'] === 'resource gone before its status was written' &&
        l['resource'] === 'AccessPolicy.bookinfo.reviews-lockdown',
    ),
  );
});
