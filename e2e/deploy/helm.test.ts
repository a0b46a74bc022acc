// The Helm chart through the real helm binary: lint, render over several value sets, check every
// rendered object as a Kubernetes object, and refuse bad values with a message naming the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHART, findObject, installNotes, objectsOfKind, renderChart, runHelm, templateRun } from './helm-runner.ts';
import {
  asList,
  asRecord,
  containerEnv,
  firstContainer,
  kubeProblems,
  podSpecOf,
  podTemplateLabels,
  rbacVerbs,
  specOf,
} from './kube-checks.ts';

const AGENT = {
  glooAgent: { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.com:9900' } },
};
const VALUE_SETS: Record<string, object> = {
  defaults: {},
  'safe mode, no start window': { glooMgmtServer: { safeMode: true, safeStartWindow: 0 } },
  'external Redis': { redis: { deploy: false, external: { url: 'rediss://redis.example.com:6380' } } },
  'agent only': { glooMgmtServer: { enabled: false }, ...AGENT },
  'agent with the file provider': {
    glooMgmtServer: { enabled: false },
    glooAgent: { ...AGENT.glooAgent, discovery: { provider: 'file', file: { configMap: 'cluster-a-manifests' } } },
  },
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
  'three replicas with a ServiceMonitor': { glooMgmtServer: { replicas: 3, serviceMonitor: { enabled: true } } },
  'file registry on a shared volume': { glooMgmtServer: { registry: 'file' } },
  'one replica without shared state': {
    glooMgmtServer: { registry: 'file', replicas: 1, state: { persistence: { enabled: false } } },
  },
};

const MGMT = 'meshrelay-mgmt-server';

test('given the chart, when helm lint runs with default and agent values, then no chart fails', async () => {
  const plain = await runHelm(['lint', '--strict', CHART]);
  assert.equal(plain.code, 0, plain.stdout + plain.stderr);
  assert.match(plain.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const agent = await runHelm([
    'lint',
    '--strict',
    CHART,
    '--set',
    'glooAgent.enabled=true',
    '--set',
    'glooAgent.cluster=cluster-a',
    '--set',
    'glooAgent.relay.serverAddress=relay.example.com:9900',
  ]);
  assert.equal(agent.code, 0, agent.stdout + agent.stderr);
});

for (const [name, values] of Object.entries(VALUE_SETS)) {
  test(`given values "${name}", when the chart renders, then every object is a valid Kubernetes object`, async () => {
    const objects = await renderChart(values);
    assert.ok(objects.length > 0, 'nothing rendered');
    assert.deepEqual(kubeProblems(objects), []);
  });
}

test('given default values, when the chart renders, then the management server runs 2 replicas spread over zones and nodes', async () => {
  const deployment = findObject(await renderChart({}), 'Deployment', MGMT);
  assert.equal(specOf(deployment)['replicas'], 2);
  const constraints = asList(podSpecOf(deployment)?.['topologySpreadConstraints']);
  assert.deepEqual(
    constraints.map((c) => [c['topologyKey'], c['whenUnsatisfiable']]),
    [
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
    ],
  );
  const labels = podTemplateLabels(deployment);
  for (const c of constraints) {
    const matchLabels = asRecord(asRecord(c['labelSelector'])['matchLabels']);
    assert.ok(Object.keys(matchLabels).length > 0, 'constraint without a selector');
    for (const [k, v] of Object.entries(matchLabels))
      assert.equal(labels[k], v, `selector ${k}=${String(v)} does not match the pods`);
  }
});

test('given default values, when the chart renders, then a PodDisruptionBudget keeps one server replica and selects its pods', async () => {
  const objects = await renderChart({});
  const pdb = findObject(objects, 'PodDisruptionBudget', MGMT);
  assert.equal(specOf(pdb)['minAvailable'], 1);
  const labels = podTemplateLabels(findObject(objects, 'Deployment', MGMT));
  for (const [k, v] of Object.entries(asRecord(asRecord(specOf(pdb)['selector'])['matchLabels'])))
    assert.equal(labels[k], v);
});

test('given default values, when the chart renders, then the server keeps its registry in the Kubernetes API of the release namespace and needs no shared volume', async () => {
  const objects = await renderChart({}, { namespace: 'mesh-mgmt' });
  const deployment = findObject(objects, 'Deployment', MGMT);
  const env = containerEnv(deployment, 'mgmt-server');
  assert.equal(env.get('MESHRELAY_REGISTRY'), 'kubernetes');
  assert.equal(env.get('MESHRELAY_NAMESPACE'), 'mesh-mgmt');
  assert.equal(env.has('KUBECONFIG'), false, 'in a pod the service account is the credential');
  assert.equal(podSpecOf(deployment)?.['automountServiceAccountToken'], true);
  assert.deepEqual(objectsOfKind(objects, 'PersistentVolumeClaim'), []);
  const state = asList(podSpecOf(deployment)?.['volumes']).find((v) => v['name'] === 'state');
  assert.deepEqual(state?.['emptyDir'], {});
  assert.equal(specOf(deployment)['replicas'], 2);
});

test('given registry file, when the chart renders, then the replicas share one ReadWriteMany claim at the state dir', async () => {
  const objects = await renderChart(VALUE_SETS['file registry on a shared volume'] ?? {});
  assert.equal(containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server').get('MESHRELAY_REGISTRY'), 'file');
  const claim = findObject(objects, 'PersistentVolumeClaim', `${MGMT}-state`);
  assert.deepEqual(specOf(claim)['accessModes'], ['ReadWriteMany']);
  const deployment = findObject(objects, 'Deployment', MGMT);
  const state = asList(podSpecOf(deployment)?.['volumes']).find((v) => v['name'] === 'state');
  assert.equal(asRecord(state?.['persistentVolumeClaim'])['claimName'], claim.metadata.name);
  const mount = asList(firstContainer(deployment)['volumeMounts']).find((m) => m['name'] === 'state');
  assert.equal(mount?.['mountPath'], containerEnv(deployment, 'mgmt-server').get('MESHRELAY_STATE_DIR'));
});

test('given one replica, when the chart renders, then no PodDisruptionBudget blocks node drains and the state lives in an emptyDir', async () => {
  const objects = await renderChart(VALUE_SETS['one replica without shared state'] ?? {});
  assert.deepEqual(objectsOfKind(objects, 'PodDisruptionBudget'), []);
  assert.deepEqual(objectsOfKind(objects, 'PersistentVolumeClaim'), []);
  const state = asList(podSpecOf(findObject(objects, 'Deployment', MGMT))?.['volumes']).find(
    (v) => v['name'] === 'state',
  );
  assert.deepEqual(state?.['emptyDir'], {});
});

test('given default values, when the chart renders, then the server drains behind a preStop sleep within its grace period', async () => {
  const deployment = findObject(await renderChart({}), 'Deployment', MGMT);
  const container = firstContainer(deployment);
  const command = asRecord(asRecord(asRecord(container['lifecycle'])['preStop'])['exec'])['command'];
  assert.deepEqual(command, ['sleep', '5']);
  assert.ok(Number(podSpecOf(deployment)?.['terminationGracePeriodSeconds']) > 5);
  assert.deepEqual(asRecord(container['livenessProbe'])['httpGet'], { path: '/healthz', port: 'http' });
  assert.deepEqual(asRecord(container['readinessProbe'])['httpGet'], { path: '/readyz', port: 'http' });
  const http = asList(container['ports']).find((p) => p['name'] === 'http');
  assert.equal(http?.['containerPort'], 8090);
});

test('given default values, when the chart renders, then relay, API and metrics Services expose 9900 (LoadBalancer), 8090 and 9091', async () => {
  const objects = await renderChart({});
  const ports = (name: string) => asList(specOf(findObject(objects, 'Service', name))['ports']).map((p) => p['port']);
  assert.equal(specOf(findObject(objects, 'Service', 'meshrelay-relay'))['type'], 'LoadBalancer');
  assert.deepEqual(ports('meshrelay-relay'), [9900]);
  assert.deepEqual(ports('meshrelay-api'), [8090]);
  assert.deepEqual(ports('meshrelay-mgmt-server-metrics'), [9091]);
  assert.deepEqual(objectsOfKind(objects, 'ServiceMonitor'), []);
});

test('given default values, when the chart renders, then the server uses the embedded Redis, which keeps nothing on disk', async () => {
  const objects = await renderChart({});
  const redis = firstContainer(findObject(objects, 'Deployment', 'meshrelay-redis'));
  assert.equal(redis['image'], 'redis:7.4');
  assert.deepEqual(redis['args'], ['--port', '6379', '--save', '', '--appendonly', 'no']);
  findObject(objects, 'Service', 'meshrelay-redis');
  const env = containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server');
  assert.equal(env.get('REDIS_URL'), 'redis://meshrelay-redis.gloo-mesh.svc:6379');
});

test('given safeMode true and safeStartWindow 0, when the chart renders, then the server gets MESHRELAY_SAFE_MODE=true and a zero window', async () => {
  const objects = await renderChart(VALUE_SETS['safe mode, no start window'] ?? {});
  const env = containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server');
  assert.equal(env.get('MESHRELAY_SAFE_MODE'), 'true');
  assert.equal(env.get('MESHRELAY_SAFE_START_WINDOW'), '0');
});

test('given a safeStartWindow with a unit, when the chart renders, then the server gets it as written (not cut to a number)', async () => {
  const objects = await renderChart({ glooMgmtServer: { safeStartWindow: '3m' } });
  assert.equal(
    containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server').get('MESHRELAY_SAFE_START_WINDOW'),
    '3m',
  );
});

test('given an external Redis URL, when the chart renders, then no Redis is deployed and REDIS_URL is that URL', async () => {
  const objects = await renderChart(VALUE_SETS['external Redis'] ?? {});
  assert.equal(
    objects.some((o) => o.metadata.name === 'meshrelay-redis'),
    false,
  );
  assert.equal(
    containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server').get('REDIS_URL'),
    'rediss://redis.example.com:6380',
  );
});

test('given an external Redis URL in a Secret, when the chart renders, then REDIS_URL comes from that Secret', async () => {
  const objects = await renderChart({
    redis: { deploy: false, external: { urlSecret: { name: 'redis-credentials', key: 'url' } } },
  });
  const env = containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server');
  assert.deepEqual(JSON.parse(env.get('REDIS_URL') ?? 'null'), {
    secretKeyRef: { name: 'redis-credentials', key: 'url' },
  });
});

test('given 3 replicas and serviceMonitor enabled, when the chart renders, then 3 replicas run and the ServiceMonitor scrapes the metrics Service', async () => {
  const objects = await renderChart(VALUE_SETS['three replicas with a ServiceMonitor'] ?? {});
  assert.equal(specOf(findObject(objects, 'Deployment', MGMT))['replicas'], 3);
  const monitor = findObject(objects, 'ServiceMonitor', MGMT);
  const metrics = findObject(objects, 'Service', 'meshrelay-mgmt-server-metrics');
  for (const [k, v] of Object.entries(asRecord(asRecord(specOf(monitor)['selector'])['matchLabels']))) {
    assert.equal(metrics.metadata.labels?.[k], v, `ServiceMonitor selector ${k} does not match the metrics Service`);
  }
  const portNames = asList(specOf(metrics)['ports']).map((p) => p['name']);
  assert.deepEqual(
    asList(specOf(monitor)['endpoints']).map((e) => e['port']),
    portNames,
  );
});

test('given the agent enabled, when the chart renders, then only the agent, its RBAC and its secrets as files are rendered', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {});
  assert.equal(
    objects.some((o) => o.metadata.name.includes('mgmt-server') || o.metadata.name.includes('redis')),
    false,
  );
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent');
  assert.equal(specOf(agent)['replicas'], 2);
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_CLUSTER'), 'cluster-a');
  assert.equal(env.get('MESHRELAY_AGENT_SERVER_ADDRESS'), 'relay.example.com:9900');
  const pod = podSpecOf(agent) ?? {};
  const container = firstContainer(agent);
  const mountFor = (volume: string) =>
    asList(container['volumeMounts']).find((m) => m['name'] === volume)?.['mountPath'];
  const secretOf = (volume: string) => asRecord(asList(pod['volumes']).find((v) => v['name'] === volume)?.['secret']);
  assert.equal(secretOf('relay-token')['secretName'], 'relay-identity-token-secret');
  assert.equal(secretOf('relay-ca')['secretName'], 'relay-root-tls-secret');
  assert.equal(env.get('MESHRELAY_AGENT_TOKEN_FILE'), `${String(mountFor('relay-token'))}/token`);
  assert.equal(env.get('MESHRELAY_AGENT_ROOT_CA_FILE'), `${String(mountFor('relay-ca'))}/ca.crt`);
  assert.equal(asRecord(container['readinessProbe'])['httpGet'] !== undefined, true);
  assert.equal(asList(container['ports'])[0]?.['containerPort'], 9977);
});

test('given the default server, when the chart renders, then its Role grants exactly what the kubernetes registry uses in the release namespace', async () => {
  const objects = await renderChart({}, { namespace: 'mesh-mgmt' });
  const role = findObject(objects, 'Role', MGMT);
  assert.equal(role.metadata.namespace, 'mesh-mgmt');
  const rules = asList(role['rules']);
  assert.deepEqual(rbacVerbs(rules, 'admin.gloo.solo.io', 'kubernetesclusters'), [
    'create',
    'delete',
    'get',
    'list',
    'patch',
    'update',
    'watch',
  ]);
  assert.deepEqual(rbacVerbs(rules, 'admin.gloo.solo.io', 'kubernetesclusters/status'), ['get', 'patch', 'update']);
  assert.deepEqual(rbacVerbs(rules, '', 'secrets'), ['create', 'delete', 'get', 'list', 'update']);
  assert.deepEqual(rbacVerbs(rules, '', 'configmaps'), ['create', 'delete', 'get', 'list', 'update']);
  assert.deepEqual(rbacVerbs(rules, 'coordination.k8s.io', 'leases'), ['create', 'get', 'update']);
  // The management plane's Workspaces and RootTrustPolicy, followed from their CRs; the policy's status.
  assert.deepEqual(rbacVerbs(rules, 'admin.gloo.solo.io', 'workspaces'), ['list', 'watch']);
  assert.deepEqual(rbacVerbs(rules, 'admin.gloo.solo.io', 'roottrustpolicies'), ['get', 'list', 'watch']);
  assert.deepEqual(rbacVerbs(rules, 'admin.gloo.solo.io', 'roottrustpolicies/status'), ['get', 'update']);
  assert.equal(rules.length, 8, "a rule beyond the registry's needs");
  const binding = findObject(objects, 'RoleBinding', MGMT);
  assert.deepEqual(asList(binding['subjects']), [{ kind: 'ServiceAccount', name: MGMT, namespace: 'mesh-mgmt' }]);
});

test('given registry file, when the chart renders, then the server gets no API access', async () => {
  const objects = await renderChart(VALUE_SETS['file registry on a shared volume'] ?? {});
  assert.deepEqual(objectsOfKind(objects, 'Role'), []);
  assert.deepEqual(objectsOfKind(objects, 'RoleBinding'), []);
  assert.equal(podSpecOf(findObject(objects, 'Deployment', MGMT))?.['automountServiceAccountToken'], false);
});

const BAD_VALUES: readonly (readonly [string, object, RegExp])[] = [
  ['negative replicas', { glooMgmtServer: { replicas: -1 } }, /\/glooMgmtServer\/replicas/],
  [
    'a safeStartWindow that is not a number',
    { glooMgmtServer: { safeStartWindow: 'soon' } },
    /\/glooMgmtServer\/safeStartWindow/,
  ],
  ['a negative safeStartWindow', { glooMgmtServer: { safeStartWindow: -5 } }, /\/glooMgmtServer\/safeStartWindow/],
  [
    'the agent enabled without a cluster',
    { glooAgent: { enabled: true, relay: { serverAddress: 'relay.example.com:9900' } } },
    /\/glooAgent\/cluster/,
  ],
  [
    'the agent enabled without a server address',
    { glooAgent: { enabled: true, cluster: 'cluster-a' } },
    /\/glooAgent\/relay\/serverAddress/,
  ],
  ['an unknown top-level key', { glooMgmtSever: { replicas: 3 } }, /glooMgmtSever/],
  ['an unknown nested key', { glooMgmtServer: { replica: 3 } }, /\/glooMgmtServer.*'replica'/],
  [
    'a cluster name that is not a DNS label',
    { ...AGENT, glooAgent: { ...AGENT.glooAgent, cluster: 'Cluster_A' } },
    /\/glooAgent\/cluster/,
  ],
  ['the latest image tag', { glooMgmtServer: { image: { tag: 'latest' } } }, /\/glooMgmtServer\/image\/tag/],
  ['no embedded Redis and no external one', { redis: { deploy: false } }, /\/redis\/external/],
  [
    'the file provider without a ConfigMap',
    { glooAgent: { ...AGENT.glooAgent, discovery: { provider: 'file' } } },
    /\/glooAgent\/discovery\/file\/configMap/,
  ],
  [
    'a PDB that can never allow an eviction',
    { glooMgmtServer: { podDisruptionBudget: { minAvailable: 2 } } },
    /glooMgmtServer\.podDisruptionBudget\.minAvailable/,
  ],
  [
    'two replicas without shared state on the file registry',
    { glooMgmtServer: { registry: 'file', state: { persistence: { enabled: false } } } },
    /glooMgmtServer\.state\.persistence\.enabled/,
  ],
  ['an unknown registry', { glooMgmtServer: { registry: 'etcd' } }, /\/glooMgmtServer\/registry/],
  ['an unknown apply backend', { ...AGENT, glooAgent: { ...AGENT.glooAgent, apply: 'helm' } }, /\/glooAgent\/apply/],
  [
    'a watched namespace that is not a DNS label',
    { ...AGENT, glooAgent: { ...AGENT.glooAgent, discovery: { watchNamespaces: ['Team_A'] } } },
    /\/glooAgent\/discovery\/watchNamespaces/,
  ],
  [
    'two agent replicas without leader election',
    { ...AGENT, glooAgent: { ...AGENT.glooAgent, leaderElection: { enabled: false } } },
    /glooAgent\.leaderElection\.enabled/,
  ],
  [
    'the access-log sink on the health port',
    { ...AGENT, glooAgent: { ...AGENT.glooAgent, accessLog: { port: 9977 } } },
    /glooAgent\.accessLog\.port/,
  ],
  [
    'a lease duration that is not a duration',
    { ...AGENT, glooAgent: { ...AGENT.glooAgent, leaderElection: { leaseDuration: 'long' } } },
    /\/glooAgent\/leaderElection\/leaseDuration/,
  ],
  [
    'a heartbeat timeout shorter than the interval',
    { glooMgmtServer: { relay: { heartbeatTimeout: 1000 } } },
    /glooMgmtServer\.relay\.heartbeatTimeout/,
  ],
  [
    'a heartbeat timeout in units shorter than the interval in units',
    { glooMgmtServer: { relay: { heartbeatInterval: '10s', heartbeatTimeout: '9500ms' } } },
    /heartbeatTimeout \(9500 ms\) must be longer than .*heartbeatInterval \(10000 ms\)/,
  ],
  [
    'a safeStartWindow with an unknown unit',
    { glooMgmtServer: { safeStartWindow: '3 weeks' } },
    /\/glooMgmtServer\/safeStartWindow/,
  ],
  [
    'a token TTL that is not a duration',
    { glooMgmtServer: { relay: { tokenTtl: 'a week' } } },
    /\/glooMgmtServer\/relay\/tokenTtl/,
  ],
  [
    'extraEnv overriding a chart value',
    { glooMgmtServer: { extraEnv: [{ name: 'MESHRELAY_SAFE_MODE', value: 'true' }] } },
    /glooMgmtServer\.extraEnv: MESHRELAY_SAFE_MODE/,
  ],
];

for (const [name, values, message] of BAD_VALUES) {
  test(`given ${name}, when the chart renders, then helm fails naming the field`, async () => {
    const run = await templateRun(values);
    assert.notEqual(run.code, 0, `helm accepted ${JSON.stringify(values)}`);
    assert.match(run.stderr, message);
  });
}

const notesOf = (values: readonly string[]): Promise<string> => installNotes(values);

test("given a server install, when helm prints its notes, then they register through the Kubernetes API or the HTTP API and install the agent with the chart's secret names", async () => {
  const notes = await notesOf([]);
  assert.match(
    notes,
    /meshctl cluster register <cluster> --kubeconfig <management-kubeconfig> --namespace gloo-mesh \\\n/,
  );
  assert.match(
    notes,
    /meshctl --server http:\/\/localhost:8090 cluster register <cluster> --token-out token --ca-out ca\.crt/,
  );
  assert.match(notes, /create secret generic relay-identity-token-secret --from-file=token=token/);
  assert.match(notes, /create secret generic relay-root-tls-secret --from-file=ca\.crt=ca\.crt/);
  assert.match(
    notes,
    /--set glooAgent\.enabled=true --set glooAgent\.cluster=<cluster> --set glooAgent\.relay\.serverAddress=<relay-address>/,
  );
  assert.match(notes, /meshctl --server http:\/\/localhost:8090 check/);
});

test('given the file registry, when helm prints its notes, then they do not offer registration through the Kubernetes API', async () => {
  const notes = await notesOf(['glooMgmtServer.registry=file']);
  assert.doesNotMatch(notes, /--kubeconfig/);
  assert.match(notes, /cluster register <cluster> --token-out token --ca-out ca\.crt/);
  assert.match(notes, /on claim meshrelay-mgmt-server-state/);
});
