// Workspaces as Workspace CRs: a `--registry kubernetes` server against the fake kube-apiserver
// (a test double of kube-apiserver from @meshrelay/testkit) translates with the CRs in the
// management namespace and again whenever they change, as with a changed input.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import type { WorkspacesView } from '../src/workspaces-file.ts';
import {
  apiGet,
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';
import { NS, kubeConfigFile, startFakeKube } from '../../registry/test/kube-harness.ts';

const TIMEOUT = { timeout: 120_000 };

function workspaceCr(
  name: string,
  namespaces: unknown,
): { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: unknown } {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: NS },
    spec: { workloadClusters: [{ name: 'a', namespaces }] },
  };
}

const POLICY: Resource = {
  apiVersion: 'security.policy.gloo.solo.io/v2',
  kind: 'AccessPolicy',
  metadata: { name: 'x-only', namespace: 'default' },
  spec: {
    applyToDestinations: [{ selector: { name: 'x' } }],
    config: { authz: { allowedClients: [{ serviceAccountSelector: { namespace: 'default', name: 'client' } }] } },
  },
};

function kubeServer(t: TestContext, fake: FakeKubeApiServer, flags: string[] = []): Promise<TestServer> {
  return startTestServer(t, ['--registry', 'kubernetes', '--kubeconfig', kubeConfigFile(t, fake), ...flags]);
}

/** Cluster `a` pushes Service x and the AccessPolicy in namespace default. */
async function pushPolicy(t: TestContext, server: TestServer): Promise<void> {
  const a = await registerCluster(server, 'a');
  const stream = openPush(mtlsClient(t, server, a));
  pushSnapshot(stream, 'a', 1, [service('x'), POLICY]);
  await next(stream, (m) => m.ack ?? undefined);
}

function policyStatus(server: TestServer): { approval: string; message: string } | undefined {
  const status = server.loop.status().resources.find((s) => s.kind === 'AccessPolicy');
  return status === undefined ? undefined : { approval: status.state.approval, message: status.state.message ?? '' };
}

test(
  'given a kubernetes-mode server and a Workspace CR, when the CR is changed and deleted, then translation follows each change without a new input',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspaceCr('team', [{ name: 'owned' }]));
    const server = await kubeServer(t, fake);
    await pushPolicy(t, server);
    await waitFor(() => policyStatus(server)?.approval === 'INVALID', {
      timeoutMs: 10_000,
      message: `status: ${JSON.stringify(policyStatus(server))}`,
    });
    assert.match(policyStatus(server)?.message ?? '', /namespace default of cluster a belongs to no workspace/);
    const view = (await apiGet<{ workspaces: WorkspacesView }>(server, '/api/v1/status')).workspaces;
    assert.deepEqual(view, { mode: 'defined', source: 'kubernetes', names: ['team'], notice: null, problems: [] });

    fake.put(workspaceCr('team', [{ name: 'owned' }, { name: 'default' }]));
    await waitFor(() => policyStatus(server)?.approval === 'ACCEPTED', {
      timeoutMs: 10_000,
      message: `after the change: ${JSON.stringify(policyStatus(server))}`,
    });
    assert.ok(
      server.outputs.current('a')?.resources.some((r) => r.kind === 'AuthorizationPolicy'),
      'the policy is translated once its namespace is owned',
    );

    fake.remove('Workspace', 'team', NS);
    await waitFor(
      async () =>
        (await apiGet<{ workspaces: WorkspacesView }>(server, '/api/v1/status')).workspaces.mode === 'implicit-global',
      { timeoutMs: 10_000, message: 'the implicit global workspace after the delete' },
    );
    await waitFor(() => !server.loop.status().resources.some((s) => s.kind === 'Workspace'), {
      timeoutMs: 10_000,
      message: 'the deleted Workspace left translation',
    });
    assert.match(server.management.workspacesView().notice ?? '', /no valid Workspace CR in the management namespace/);
  },
);

test(
  'given a Workspace CR in force, when it is changed to an invalid one, then the status names the object and field and translation keeps the previous version',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspaceCr('team', [{ name: 'default' }]));
    const server = await kubeServer(t, fake);
    await pushPolicy(t, server);
    await waitFor(() => policyStatus(server)?.approval === 'ACCEPTED', {
      timeoutMs: 10_000,
      message: `status: ${JSON.stringify(policyStatus(server))}`,
    });
    const output = server.outputs.current('a')?.hash;

    fake.put({
      ...workspaceCr('team', []),
      spec: { workloadClusters: [{ name: 'a', namespaces: [{ name: 'default' }] }], importFrom: 'everything' },
    });
    await waitFor(() => server.management.workspacesView().problems.length === 1, {
      timeoutMs: 10_000,
      message: 'the invalid Workspace reported',
    });
    const view = (await apiGet<{ workspaces: WorkspacesView }>(server, '/api/v1/status')).workspaces;
    assert.equal(view.problems.length, 1);
    assert.match(
      view.problems[0] ?? '',
      /^Workspace gloo-mesh\/team: spec.*importFrom.*; the previous valid version stays in force$/,
    );
    assert.deepEqual(view.names, ['team']);
    await server.loop.runNow();
    assert.equal(policyStatus(server)?.approval, 'ACCEPTED');
    assert.equal(server.outputs.current('a')?.hash, output, 'the output is the one the previous Workspace gave');
  },
);

test(
  'given only a Workspace CR that was never valid, then nothing falls back to the implicit global workspace: no workspace is in force and nothing is translated',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put({
      ...workspaceCr('team', []),
      spec: { workloadClusters: [{ name: 'a', namespaces: [{ name: 'default' }] }], importFrom: 'everything' },
    });
    const server = await kubeServer(t, fake);
    await pushPolicy(t, server);
    await waitFor(() => policyStatus(server) !== undefined, {
      timeoutMs: 10_000,
      message: 'the AccessPolicy was never judged',
    });
    const view = (await apiGet<{ workspaces: WorkspacesView }>(server, '/api/v1/status')).workspaces;
    assert.equal(view.mode, 'defined');
    assert.deepEqual(view.names, []);
    assert.match(view.notice ?? '', /none is valid: no workspace is in force/);
    assert.match(view.problems[0] ?? '', /^Workspace gloo-mesh\/team: spec.*importFrom/);
    assert.match(policyStatus(server)?.message ?? '', /belongs to no workspace/);
    assert.ok(
      !(server.outputs.current('a')?.resources ?? []).some((r) => r.kind === 'AuthorizationPolicy'),
      'the policy was translated as if one global workspace owned it',
    );

    fake.put(workspaceCr('team', [{ name: 'default' }]));
    await waitFor(() => policyStatus(server)?.approval === 'ACCEPTED', {
      timeoutMs: 10_000,
      message: `after the fix: ${JSON.stringify(policyStatus(server))}`,
    });
  },
);

test(
  "given --workspaces-file with the kubernetes registry, when the server runs, then the file's Workspaces are in force and the CRs are not read",
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put(workspaceCr('from-cr', [{ name: 'default' }]));
    const dir = mkdtempSync(join(tmpdir(), 'workspaces-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'workspaces.yaml');
    writeFileSync(
      file,
      'apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: from-file, namespace: gloo-mesh }\nspec:\n  workloadClusters: [{ name: a, namespaces: [{ name: default }] }]\n',
    );
    const server = await kubeServer(t, fake, ['--workspaces-file', file]);
    assert.deepEqual(server.management.workspacesView(), {
      mode: 'defined',
      source: 'file',
      names: ['from-file'],
      notice: null,
      problems: [],
    });
    assert.ok(!fake.requests.some((r) => r.path.endsWith('/workspaces')), 'no Workspace CR was listed');
  },
);

test(
  'given a RootTrustPolicy CR, when a kubernetes-mode server starts, then it is read and an invalid edit keeps the previous version',
  TIMEOUT,
  async (t) => {
    const fake = await startFakeKube(t);
    fake.put({
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'RootTrustPolicy',
      metadata: { name: 'root', namespace: NS },
      spec: { config: { mgmtServerCa: { secretRef: { name: 'root-ca' } }, intermediateCertOptions: { ttlDays: 30 } } },
    });
    const server = await kubeServer(t, fake);
    const state = server.management.rootTrustPolicy();
    assert.deepEqual(state?.policy?.mgmtServerCa, { type: 'secretRef', secretRef: { name: 'root-ca', namespace: NS } });
    assert.deepEqual(state?.policy?.intermediateCertOptions, { ttlDays: 30 });

    const seen: string[] = [];
    server.management.onRootTrustPolicyChange((s) => seen.push(s.problems.join()));
    fake.put({
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'RootTrustPolicy',
      metadata: { name: 'root', namespace: NS },
      spec: { config: { intermediateCertOptions: { rsaKeySizeBytes: 1024 } } },
    });
    await waitFor(() => seen.length > 0, { timeoutMs: 10_000, message: 'the invalid edit was not reported' });
    assert.match(
      seen[0] ?? '',
      /RootTrustPolicy gloo-mesh\/root: spec\.config\.intermediateCertOptions\.rsaKeySizeBytes: .*; its previous valid version is kept/,
    );
    assert.deepEqual(server.management.rootTrustPolicy()?.policy?.intermediateCertOptions, { ttlDays: 30 });
  },
);
