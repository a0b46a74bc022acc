// The chart's RBAC against what the binaries really ask of the Kubernetes API: a management server
// and a relay agent run as processes with the environment the chart renders for them (only ports,
// paths and the API's address swapped for local ones), each against a Kubernetes API test double
// (@meshrelay/testkit: no real kube-apiserver runs on these machines). Every request either makes
// must be allowed by the Role/ClusterRole the chart binds to its service account. A RootTrustPolicy
// is in force, so the mesh trust requests (root Secret, policy status, cacerts) are among them.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { OWNER_LABEL } from '@meshrelay/api';
import {
  freePort,
  spawnProcess,
  startFakeKubeApiServer,
  waitFor,
  type FakeKubeApiServer,
  type FakeKubeObjectInput,
  type ProcessHandle,
} from '@meshrelay/testkit';
import { compileCrdSchema } from './crd-schema.ts';
import { CHART, ROOT, findObject, objectsOfKind, renderChart, type KubeObject } from './helm-runner.ts';
import { containerEnv } from './kube-checks.ts';
import { allowedBy, describeRequest, resourceRequestOf, type ResourceRequest } from './rbac-check.ts';

const NS = 'gloo-mesh';
const CLUSTER = 'cluster-a';
const AGENT_VALUES = {
  glooMgmtServer: { enabled: false },
  glooAgent: { enabled: true, cluster: CLUSTER, relay: { serverAddress: 'relay.example.com:9900' } },
};

/**
 * The chart's variables as a process gets them, valueFrom entries resolved as the kubelet would, then `local` applied.
 */
function processEnv(
  rendered: ReadonlyMap<string, string>,
  fromPod: Readonly<Record<string, string>>,
  local: Readonly<Record<string, string | undefined>>,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of rendered) {
    if (!value.startsWith('{')) env[name] = value;
    else if (fromPod[name] !== undefined) env[name] = fromPod[name];
    else throw new Error(`${name} comes from ${value}: give the test its value`);
  }
  return { ...env, ...local };
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-chart-rbac-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startFake(t: TestContext, namespaces: readonly string[]): Promise<FakeKubeApiServer> {
  const fake = await startFakeKubeApiServer({ namespaces });
  t.after(() => fake.stop());
  return fake;
}

function kubeconfigFile(dir: string, fake: FakeKubeApiServer, name: string): string {
  const file = join(dir, name);
  writeFileSync(file, fake.kubeConfigYaml(), { mode: 0o600 });
  return file;
}

/** A generated root with small keys (the test's CPU), as an operator would create the CR. */
const ROOT_TRUST_POLICY = {
  apiVersion: 'admin.gloo.solo.io/v2',
  kind: 'RootTrustPolicy',
  metadata: { name: 'root', namespace: NS },
  spec: {
    config: {
      mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } },
      intermediateCertOptions: { rsaKeySizeBytes: 2048, ttlDays: 7 },
    },
  },
};

/** True when the chart's RootTrustPolicy CRD admits `status` on the policy. */
function statusAdmittedByCrd(status: unknown): boolean {
  const crd = parseAllDocuments(
    readFileSync(join(CHART, 'crds', 'admin.gloo.solo.io_roottrustpolicies.yaml'), 'utf8'),
  )[0]?.toJS() as { spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] } };
  const validate = compileCrdSchema(crd.spec.versions[0]?.schema.openAPIV3Schema ?? {});
  return validate({ ...ROOT_TRUST_POLICY, status }) === true;
}

/** examples/cluster-a as objects in the workload cluster's API. */
function seedWorkloadCluster(fake: FakeKubeApiServer): void {
  const dir = join(ROOT, 'examples', CLUSTER);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const obj: unknown = doc.toJS();
      if (obj !== null && typeof obj === 'object') fake.put(obj as FakeKubeObjectInput);
    }
  }
}

async function spawnBinary(t: TestContext, name: string, bin: string, env: NodeJS.ProcessEnv): Promise<ProcessHandle> {
  const proc = await spawnProcess({ name, command: process.execPath, args: [join(ROOT, bin)], env });
  t.after(() => proc.stop(5000));
  return proc;
}

/** The admin token the server created in its Secret on first start, read as an operator with RBAC on Secrets would. */
function adminToken(fake: FakeKubeApiServer): string {
  const data = fake.get('Secret', 'meshrelay-admin-token', NS)?.['data'] as Record<string, string> | undefined;
  if (data?.['token'] === undefined) throw new Error('the server created no Secret meshrelay-admin-token');
  return Buffer.from(data['token'], 'base64').toString('utf8');
}

async function api(base: string, token: string, method: string, path: string, body?: object): Promise<unknown> {
  const auth = { authorization: `Bearer ${token}` };
  const res = await fetch(`${base}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify(body) }
      : { headers: auth }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

/**
 * The requests the fake received, as RBAC sees them, each once (per object name, since rules may list resourceNames).
 */
function requestsOf(fake: FakeKubeApiServer): ResourceRequest[] {
  const seen = new Map<string, ResourceRequest>();
  for (const request of fake.requests) {
    const r = resourceRequestOf(request);
    seen.set(`${describeRequest(r)} ${r.name ?? ''}`, r);
  }
  return [...seen.values()];
}

function denied(requests: readonly ResourceRequest[], roles: readonly KubeObject[]): string[] {
  return requests.filter((r) => !allowedBy(roles, r)).map(describeRequest);
}

test(
  "given a server and an agent running with the chart's environment, when a cluster registers, relays, rotates its token and deregisters, then every API request is allowed by the chart's RBAC",
  { timeout: 90_000 },
  async (t) => {
    const dir = tempDir(t);
    const mgmtApi = await startFake(t, ['default', NS]);
    const workloadApi = await startFake(t, ['default', NS, 'bookinfo', 'istio-gateways', 'istio-system']);
    seedWorkloadCluster(workloadApi);
    workloadApi.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: { mesh: 'trustDomain: a.example\n' },
    });
    mgmtApi.put(ROOT_TRUST_POLICY);
    const serverObjects = await renderChart({});
    const agentObjects = await renderChart(AGENT_VALUES);
    const [relayPort, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];

    const serverEnv = processEnv(
      containerEnv(findObject(serverObjects, 'Deployment', 'meshrelay-mgmt-server'), 'mgmt-server'),
      { POD_NAME: 'meshrelay-mgmt-server-7d9f-x2' },
      {
        KUBECONFIG: kubeconfigFile(dir, mgmtApi, 'mgmt.kubeconfig'),
        REDIS_URL: undefined,
        MESHRELAY_RELAY_HOST: '127.0.0.1',
        MESHRELAY_HTTP_HOST: '127.0.0.1',
        MESHRELAY_METRICS_HOST: '127.0.0.1',
        MESHRELAY_RELAY_PORT: String(relayPort),
        MESHRELAY_HTTP_PORT: String(httpPort),
        MESHRELAY_METRICS_PORT: String(metricsPort),
        MESHRELAY_STATE_DIR: join(dir, 'server-state'),
        MESHRELAY_ADVERTISE_ADDRESS: `localhost:${relayPort}`,
      },
    );
    assert.equal(serverEnv['MESHRELAY_REGISTRY'], 'kubernetes');
    const server = await spawnBinary(t, 'mgmt', 'packages/mgmt-server/bin/meshrelay-server.js', serverEnv);
    await server.waitForLine(/management server started/, 30_000);
    const base = `http://127.0.0.1:${httpPort}`;
    const token = adminToken(mgmtApi);

    const registration = (await api(base, token, 'POST', '/api/v1/clusters', { name: CLUSTER })) as {
      token: string;
      relay: { caBundlePem: string };
    };
    writeFileSync(join(dir, 'token'), registration.token, { mode: 0o600 });
    writeFileSync(join(dir, 'ca.crt'), registration.relay.caBundlePem);
    const agentEnv = processEnv(
      containerEnv(findObject(agentObjects, 'Deployment', 'meshrelay-agent'), 'agent'),
      { MESHRELAY_AGENT_REPLICA_ID: 'meshrelay-agent-5c8d-q1' },
      {
        KUBECONFIG: kubeconfigFile(dir, workloadApi, 'workload.kubeconfig'),
        MESHRELAY_AGENT_SERVER_ADDRESS: `localhost:${relayPort}`,
        MESHRELAY_AGENT_TOKEN_FILE: join(dir, 'token'),
        MESHRELAY_AGENT_ROOT_CA_FILE: join(dir, 'ca.crt'),
        MESHRELAY_AGENT_STATE_DIR: join(dir, 'agent-state'),
        MESHRELAY_AGENT_HEALTH_PORT: '0',
        MESHRELAY_AGENT_ACCESS_LOG_PORT: '0',
        MESHRELAY_AGENT_TRUST_INTERVAL: '1s',
      },
    );
    assert.deepEqual(
      [
        agentEnv['MESHRELAY_AGENT_DISCOVERY_PROVIDER'],
        agentEnv['MESHRELAY_AGENT_APPLY'],
        agentEnv['MESHRELAY_AGENT_LEADER_ELECTION'],
      ],
      ['kubernetes', 'kubernetes', 'kubernetes'],
    );
    const agent = await spawnBinary(t, 'agent', 'packages/agent/bin/meshrelay-agent.js', agentEnv);

    await waitFor(
      () => workloadApi.objects('ServiceEntry').some((o) => o.metadata.labels?.[OWNER_LABEL] !== undefined),
      {
        timeoutMs: 45_000,
        intervalMs: 100,
        message: `no output applied to the workload cluster; agent log:\n${agent.lines.slice(-20).join('\n')}`,
      },
    );
    await waitFor(
      () =>
        workloadApi.get('virtualdestinations.networking.gloo.solo.io', 'reviews-global', 'bookinfo')?.['status'] !==
        undefined,
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        message: 'the agent wrote no status for the VirtualDestination',
      },
    );
    await waitFor(() => workloadApi.get('Secret', 'cacerts', 'istio-system') !== undefined, {
      timeoutMs: 45_000,
      intervalMs: 100,
      message: `the agent wrote no cacerts Secret; agent log:\n${agent.lines.slice(-20).join('\n')}`,
    });
    let status: unknown;
    await waitFor(
      () => {
        status = mgmtApi.get('RootTrustPolicy', 'root', NS)?.['status'];
        return status !== undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, message: 'the server wrote no RootTrustPolicy status' },
    );
    assert.equal(statusAdmittedByCrd(status), true, `the CRD refuses the status written: ${JSON.stringify(status)}`);
    await api(base, token, 'PATCH', `/api/v1/clusters/${CLUSTER}`, { skipWarming: true });
    await api(base, token, 'POST', `/api/v1/clusters/${CLUSTER}/token`);
    await agent.stop(5000);
    await api(base, token, 'DELETE', `/api/v1/clusters/${CLUSTER}`);
    await waitFor(() => mgmtApi.objects('KubernetesCluster', NS).length === 0, {
      message: 'the KubernetesCluster was not deleted',
    });
    await server.stop(5000);

    const serverRequests = requestsOf(mgmtApi);
    const agentRequests = requestsOf(workloadApi);
    for (const expected of [
      'create admin.gloo.solo.io/kubernetesclusters in gloo-mesh',
      'update admin.gloo.solo.io/kubernetesclusters/status in gloo-mesh',
      'create core/secrets in gloo-mesh',
      'update coordination.k8s.io/leases in gloo-mesh',
      // Shared state (stream claims, held outputs, kept contributions) in ConfigMaps.
      'list core/configmaps in gloo-mesh',
      'update core/configmaps in gloo-mesh',
      'delete core/configmaps in gloo-mesh',
      // The management plane's Workspaces and RootTrustPolicy, followed from their CRs.
      'list admin.gloo.solo.io/workspaces in gloo-mesh',
      'watch admin.gloo.solo.io/workspaces in gloo-mesh',
      'list admin.gloo.solo.io/roottrustpolicies in gloo-mesh',
      'watch admin.gloo.solo.io/roottrustpolicies in gloo-mesh',
      'update admin.gloo.solo.io/roottrustpolicies/status in gloo-mesh',
    ]) {
      assert.ok(
        serverRequests.map(describeRequest).includes(expected),
        `the server never made "${expected}": the scenario did not exercise it`,
      );
    }
    for (const expected of [
      'watch core/services (cluster-wide)',
      'patch networking.istio.io/serviceentries in bookinfo',
      'update coordination.k8s.io/leases in gloo-mesh',
      'create core/secrets in gloo-mesh',
      'get core/secrets in gloo-mesh',
      'get networking.gloo.solo.io/virtualdestinations/status in bookinfo',
      'patch networking.gloo.solo.io/virtualdestinations/status in bookinfo',
      // Istio's mesh config, for the trust domain.
      'list core/configmaps in istio-system',
      'watch core/configmaps in istio-system',
      // Mesh trust: the cluster's intermediate CA for istiod.
      'get core/secrets in istio-system',
      'create core/secrets in istio-system',
    ]) {
      assert.ok(
        agentRequests.map(describeRequest).includes(expected),
        `the agent never made "${expected}": the scenario did not exercise it`,
      );
    }
    const serverRoles = [...objectsOfKind(serverObjects, 'Role'), ...objectsOfKind(serverObjects, 'ClusterRole')];
    const agentRoles = [...objectsOfKind(agentObjects, 'Role'), ...objectsOfKind(agentObjects, 'ClusterRole')];
    assert.deepEqual(denied(serverRequests, serverRoles), [], "the server's requests that its Role denies");
    assert.deepEqual(denied(agentRequests, agentRoles), [], "the agent's requests that its Role and ClusterRole deny");
  },
);
