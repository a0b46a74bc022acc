// The relay agent's part of the Helm chart through the real helm binary: which backends, RBAC,
// leader election and access-log Service each combination of glooAgent values renders.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findObject, objectsOfKind, renderChart } from './helm-runner.ts';
import {
  asList,
  asRecord,
  containerEnv,
  firstContainer,
  podSpecOf,
  podTemplateLabels,
  rbacVerbs,
  specOf,
  volumeNames,
} from './kube-checks.ts';

const AGENT = {
  glooAgent: { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.com:9900' } },
};
const VALUE_SETS: Record<string, object> = {
  'agent only': { glooMgmtServer: { enabled: false }, ...AGENT },
  'agent with file output': {
    glooMgmtServer: { enabled: false },
    glooAgent: { ...AGENT.glooAgent, apply: 'file', discovery: { watchNamespaces: ['bookinfo'] } },
  },
  'agent with file discovery and kubernetes apply, one replica, no election': {
    glooMgmtServer: { enabled: false },
    glooAgent: {
      ...AGENT.glooAgent,
      replicas: 1,
      apply: 'kubernetes',
      leaderElection: { enabled: false },
      discovery: { provider: 'file', file: { configMap: 'm' } },
    },
  },
};

const DISCOVERED: readonly (readonly [string, string])[] = [
  ['', 'services'],
  ['', 'pods'],
  ['', 'nodes'],
  ['discovery.k8s.io', 'endpointslices'],
  ['networking.gloo.solo.io', 'virtualdestinations'],
  ['networking.gloo.solo.io', 'routetables'],
  ['security.policy.gloo.solo.io', 'accesspolicies'],
  ['resilience.policy.gloo.solo.io', 'failoverpolicies'],
  ['resilience.policy.gloo.solo.io', 'outlierdetectionpolicies'],
  ['resilience.policy.gloo.solo.io', 'retrytimeoutpolicies'],
  ['resilience.policy.gloo.solo.io', 'faultinjectionpolicies'],
  ['security.policy.gloo.solo.io', 'corspolicies'],
  ['trafficcontrol.policy.gloo.solo.io', 'headermanipulationpolicies'],
  ['trafficcontrol.policy.gloo.solo.io', 'loadbalancerpolicies'],
  ['trafficcontrol.policy.gloo.solo.io', 'mirrorpolicies'],
  ['networking.gloo.solo.io', 'externalservices'],
  ['networking.gloo.solo.io', 'externalendpoints'],
  ['networking.gloo.solo.io', 'virtualgateways'],
  ['admin.gloo.solo.io', 'workspacesettings'],
];
const APPLIED: readonly (readonly [string, string])[] = [
  ['networking.istio.io', 'serviceentries'],
  ['networking.istio.io', 'destinationrules'],
  ['networking.istio.io', 'virtualservices'],
  ['security.istio.io', 'authorizationpolicies'],
  ['security.istio.io', 'peerauthentications'],
  ['networking.istio.io', 'gateways'],
  ['networking.istio.io', 'workloadentries'],
];

test('given the agent with kubernetes discovery and apply, when the chart renders, then its ClusterRole lists and watches workloads and Gloo kinds and applies Istio kinds', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {});
  const rules = asList(findObject(objects, 'ClusterRole', 'meshrelay-agent-gloo-mesh')['rules']);
  for (const [group, resource] of DISCOVERED)
    assert.deepEqual(rbacVerbs(rules, group, resource), ['list', 'watch'], `${group}/${resource}`);
  for (const [group, resource] of APPLIED)
    assert.deepEqual(
      rbacVerbs(rules, group, resource),
      ['create', 'delete', 'get', 'list', 'patch'],
      `${group}/${resource}`,
    );
  const binding = findObject(objects, 'ClusterRoleBinding', 'meshrelay-agent-gloo-mesh');
  assert.deepEqual(asList(binding['subjects']), [
    { kind: 'ServiceAccount', name: 'meshrelay-agent', namespace: 'gloo-mesh' },
  ]);
  assert.equal(
    podSpecOf(findObject(objects, 'Deployment', 'meshrelay-agent'))?.['serviceAccountName'],
    'meshrelay-agent',
  );
});

test('given the agent elects a leader, when the chart renders, then a Role in its namespace lets it get, create and update Leases only', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {}, { namespace: 'mesh-agents' });
  const role = findObject(objects, 'Role', 'meshrelay-agent-leader-election');
  assert.equal(role.metadata.namespace, 'mesh-agents');
  assert.deepEqual(asList(role['rules']), [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ]);
  const binding = findObject(objects, 'RoleBinding', 'meshrelay-agent-leader-election');
  assert.deepEqual(asList(binding['subjects']), [
    { kind: 'ServiceAccount', name: 'meshrelay-agent', namespace: 'mesh-agents' },
  ]);
});

test('given file discovery with kubernetes apply, when the chart renders, then the ClusterRole only applies Istio kinds and the manifests come from the ConfigMap', async () => {
  const objects = await renderChart(
    VALUE_SETS['agent with file discovery and kubernetes apply, one replica, no election'] ?? {},
  );
  const rules = asList(findObject(objects, 'ClusterRole', 'meshrelay-agent-gloo-mesh')['rules']);
  for (const [group, resource] of DISCOVERED)
    assert.deepEqual(rbacVerbs(rules, group, resource), [], `${group}/${resource}`);
  for (const [group, resource] of APPLIED)
    assert.ok(rbacVerbs(rules, group, resource).includes('patch'), `${group}/${resource}`);
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent');
  assert.deepEqual(
    volumeNames(agent).filter((n) => n === 'manifests' || n === 'output'),
    ['manifests'],
  );
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_DISCOVERY_PROVIDER'), 'file');
  assert.equal(env.get('MESHRELAY_AGENT_APPLY'), 'kubernetes');
  assert.equal(env.has('MESHRELAY_AGENT_OUTPUT_DIR'), false);
});

test('given file discovery and file apply without election or credentials Secret, when the chart renders, then the agent gets no API access at all', async () => {
  const objects = await renderChart({
    glooMgmtServer: { enabled: false },
    glooAgent: {
      ...AGENT.glooAgent,
      relay: { ...AGENT.glooAgent.relay, credentialsSecret: '' },
      replicas: 1,
      leaderElection: { enabled: false },
      discovery: { provider: 'file', file: { configMap: 'm' } },
    },
  });
  for (const kind of ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'])
    assert.deepEqual(objectsOfKind(objects, kind), [], kind);
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent');
  assert.equal(podSpecOf(agent)?.['automountServiceAccountToken'], false);
  assert.equal(containerEnv(agent, 'agent').get('MESHRELAY_AGENT_APPLY'), 'file');
  assert.deepEqual(
    volumeNames(agent).filter((n) => n === 'manifests' || n === 'output'),
    ['manifests', 'output'],
  );
});

test('given default agent values, when the chart renders, then the client key and certificate live in a Secret of the release namespace the agent may get and update by name', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {}, { namespace: 'mesh-agents' });
  const env = containerEnv(findObject(objects, 'Deployment', 'meshrelay-agent'), 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_CREDENTIALS_SECRET'), 'relay-client-tls-secret');
  assert.equal(env.get('MESHRELAY_AGENT_CREDENTIALS_NAMESPACE'), 'mesh-agents');
  const role = findObject(objects, 'Role', 'meshrelay-agent-credentials');
  assert.equal(role.metadata.namespace, 'mesh-agents');
  assert.deepEqual(asList(role['rules']), [
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['relay-client-tls-secret'], verbs: ['get', 'update'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  ]);
  const binding = findObject(objects, 'RoleBinding', 'meshrelay-agent-credentials');
  assert.deepEqual(asList(binding['subjects']), [
    { kind: 'ServiceAccount', name: 'meshrelay-agent', namespace: 'mesh-agents' },
  ]);
});

test('given file discovery and file apply without election but with the credentials Secret, when the chart renders, then the agent mounts its service account token for the Secret', async () => {
  const objects = await renderChart({
    glooMgmtServer: { enabled: false },
    glooAgent: {
      ...AGENT.glooAgent,
      replicas: 1,
      leaderElection: { enabled: false },
      discovery: { provider: 'file', file: { configMap: 'm' } },
    },
  });
  assert.equal(podSpecOf(findObject(objects, 'Deployment', 'meshrelay-agent'))?.['automountServiceAccountToken'], true);
  assert.deepEqual(
    objectsOfKind(objects, 'Role').map((r) => r.metadata.name),
    ['meshrelay-agent-credentials'],
  );
  assert.deepEqual(objectsOfKind(objects, 'ClusterRole'), []);
});

test('given default agent values, when the chart renders, then the agent discovers and applies through the Kubernetes API and watches every namespace', async () => {
  const agent = findObject(await renderChart(VALUE_SETS['agent only'] ?? {}), 'Deployment', 'meshrelay-agent');
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_DISCOVERY_PROVIDER'), 'kubernetes');
  assert.equal(env.get('MESHRELAY_AGENT_APPLY'), 'kubernetes');
  assert.equal(env.has('MESHRELAY_AGENT_WATCH_NAMESPACES'), false);
  assert.equal(env.has('MESHRELAY_AGENT_MANIFESTS_DIR'), false);
  assert.equal(env.has('KUBECONFIG'), false);
  assert.equal(podSpecOf(agent)?.['automountServiceAccountToken'], true);
  assert.deepEqual(
    volumeNames(agent).filter((n) => n === 'manifests' || n === 'output'),
    [],
  );
});

test('given watchNamespaces and file apply, when the chart renders, then the agent watches those namespaces and writes outputs into an emptyDir', async () => {
  const agent = findObject(
    await renderChart(VALUE_SETS['agent with file output'] ?? {}),
    'Deployment',
    'meshrelay-agent',
  );
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_WATCH_NAMESPACES'), 'bookinfo');
  assert.equal(env.get('MESHRELAY_AGENT_APPLY'), 'file');
  const mount = asList(firstContainer(agent)['volumeMounts']).find((m) => m['name'] === 'output');
  assert.equal(mount?.['mountPath'], env.get('MESHRELAY_AGENT_OUTPUT_DIR'));
});

test('given two agent replicas, when the chart renders, then they elect a leader with a Lease in the release namespace, each under its pod name', async () => {
  const agent = findObject(
    await renderChart(
      { glooMgmtServer: { enabled: false }, glooAgent: { ...AGENT.glooAgent, replicas: 2 } },
      { namespace: 'mesh-agents' },
    ),
    'Deployment',
    'meshrelay-agent',
  );
  assert.equal(specOf(agent)['replicas'], 2);
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_LEADER_ELECTION'), 'kubernetes');
  assert.equal(env.get('MESHRELAY_AGENT_LEASE_NAMESPACE'), 'mesh-agents');
  assert.equal(env.get('MESHRELAY_AGENT_LEASE_DURATION'), '15s');
  assert.equal(env.get('MESHRELAY_AGENT_RENEW_DEADLINE'), '10s');
  assert.equal(env.get('MESHRELAY_AGENT_RETRY_PERIOD'), '2s');
  assert.deepEqual(JSON.parse(env.get('MESHRELAY_AGENT_REPLICA_ID') ?? 'null'), {
    fieldRef: { fieldPath: 'metadata.name' },
  });
});

test('given one agent replica without election, when the chart renders, then it runs without a Lease and without lease settings', async () => {
  const objects = await renderChart({
    glooMgmtServer: { enabled: false },
    glooAgent: { ...AGENT.glooAgent, replicas: 1, leaderElection: { enabled: false } },
  });
  const env = containerEnv(findObject(objects, 'Deployment', 'meshrelay-agent'), 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_LEADER_ELECTION'), 'none');
  assert.deepEqual(
    [...env.keys()].filter(
      (name) => name.startsWith('MESHRELAY_AGENT_LEASE') || name === 'MESHRELAY_AGENT_RENEW_DEADLINE',
    ),
    [],
  );
  assert.deepEqual(
    objectsOfKind(objects, 'Role')
      .map((r) => r.metadata.name)
      .sort(),
    ['meshrelay-agent-cacerts', 'meshrelay-agent-credentials', 'meshrelay-agent-mesh-config'],
    'no leader-election Role',
  );
});

test('given the agent, when the chart renders, then every replica serves the access-log sink on 9978 behind a gRPC Service', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {});
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent');
  const port = asList(firstContainer(agent)['ports']).find((p) => p['name'] === 'grpc-access-log');
  assert.equal(port?.['containerPort'], 9978);
  assert.equal(containerEnv(agent, 'agent').get('MESHRELAY_AGENT_ACCESS_LOG_PORT'), '9978');
  const service = findObject(objects, 'Service', 'meshrelay-agent-access-log');
  assert.deepEqual(asList(specOf(service)['ports']), [
    { name: 'grpc-access-log', port: 9978, targetPort: 'grpc-access-log', protocol: 'TCP', appProtocol: 'grpc' },
  ]);
  const labels = podTemplateLabels(agent);
  for (const [k, v] of Object.entries(asRecord(specOf(service)['selector'])))
    assert.equal(labels[k], v, `selector ${k}`);
});
