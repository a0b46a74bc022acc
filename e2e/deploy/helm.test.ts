// The Helm chart through the real helm binary: lint, render over several value sets, check every
// rendered object as a Kubernetes object, and refuse bad values with a message naming the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHART, findObject, objectsOfKind, renderChart, runHelm, templateRun, type KubeObject } from './helm-runner.ts';
import { asList, asRecord, containerEnv, firstContainer, kubeProblems, podSpecOf } from './kube-checks.ts';

const AGENT = { glooAgent: { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.com:9900' } } };
const VALUE_SETS: Record<string, object> = {
  defaults: {},
  'safe mode, no start window': { glooMgmtServer: { safeMode: true, safeStartWindow: 0 } },
  'external Redis': { redis: { deploy: false, external: { url: 'rediss://redis.example.com:6380' } } },
  'agent only': { glooMgmtServer: { enabled: false }, ...AGENT },
  'agent with the file provider': { glooMgmtServer: { enabled: false }, glooAgent: { ...AGENT.glooAgent, discovery: { provider: 'file', file: { configMap: 'cluster-a-manifests' } } } },
  'three replicas with a ServiceMonitor': { glooMgmtServer: { replicas: 3, serviceMonitor: { enabled: true } } },
  'one replica without shared state': { glooMgmtServer: { replicas: 1, state: { persistence: { enabled: false } } } },
};

const MGMT = 'meshrelay-mgmt-server';

function spec(obj: KubeObject): Record<string, unknown> {
  return asRecord(obj['spec']);
}

function podLabels(workload: KubeObject): Record<string, unknown> {
  return asRecord(asRecord(asRecord(spec(workload)['template'])['metadata'])['labels']);
}

test('given the chart, when helm lint runs with default and agent values, then no chart fails', async () => {
  const plain = await runHelm(['lint', '--strict', CHART]);
  assert.equal(plain.code, 0, plain.stdout + plain.stderr);
  assert.match(plain.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const agent = await runHelm(['lint', '--strict', CHART, '--set', 'glooAgent.enabled=true', '--set', 'glooAgent.cluster=cluster-a', '--set', 'glooAgent.relay.serverAddress=relay.example.com:9900']);
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
  assert.equal(spec(deployment)['replicas'], 2);
  const constraints = asList(podSpecOf(deployment)?.['topologySpreadConstraints']);
  assert.deepEqual(constraints.map((c) => [c['topologyKey'], c['whenUnsatisfiable']]), [
    ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
    ['kubernetes.io/hostname', 'ScheduleAnyway'],
  ]);
  const labels = podLabels(deployment);
  for (const c of constraints) {
    const matchLabels = asRecord(asRecord(c['labelSelector'])['matchLabels']);
    assert.ok(Object.keys(matchLabels).length > 0, 'constraint without a selector');
    for (const [k, v] of Object.entries(matchLabels)) assert.equal(labels[k], v, `selector ${k}=${String(v)} does not match the pods`);
  }
});

test('given default values, when the chart renders, then a PodDisruptionBudget keeps one server replica and selects its pods', async () => {
  const objects = await renderChart({});
  const pdb = findObject(objects, 'PodDisruptionBudget', MGMT);
  assert.equal(spec(pdb)['minAvailable'], 1);
  const labels = podLabels(findObject(objects, 'Deployment', MGMT));
  for (const [k, v] of Object.entries(asRecord(asRecord(spec(pdb)['selector'])['matchLabels']))) assert.equal(labels[k], v);
});

test('given default values, when the chart renders, then the replicas share one ReadWriteMany claim at the state dir', async () => {
  const objects = await renderChart({});
  const claim = findObject(objects, 'PersistentVolumeClaim', `${MGMT}-state`);
  assert.deepEqual(spec(claim)['accessModes'], ['ReadWriteMany']);
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
  const state = asList(podSpecOf(findObject(objects, 'Deployment', MGMT))?.['volumes']).find((v) => v['name'] === 'state');
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
  const ports = (name: string) => asList(spec(findObject(objects, 'Service', name))['ports']).map((p) => p['port']);
  assert.equal(spec(findObject(objects, 'Service', 'meshrelay-relay'))['type'], 'LoadBalancer');
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

test('given an external Redis URL, when the chart renders, then no Redis is deployed and REDIS_URL is that URL', async () => {
  const objects = await renderChart(VALUE_SETS['external Redis'] ?? {});
  assert.equal(objects.some((o) => o.metadata.name === 'meshrelay-redis'), false);
  assert.equal(containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server').get('REDIS_URL'), 'rediss://redis.example.com:6380');
});

test('given an external Redis URL in a Secret, when the chart renders, then REDIS_URL comes from that Secret', async () => {
  const objects = await renderChart({ redis: { deploy: false, external: { urlSecret: { name: 'redis-credentials', key: 'url' } } } });
  const env = containerEnv(findObject(objects, 'Deployment', MGMT), 'mgmt-server');
  assert.deepEqual(JSON.parse(env.get('REDIS_URL') ?? 'null'), { secretKeyRef: { name: 'redis-credentials', key: 'url' } });
});

test('given 3 replicas and serviceMonitor enabled, when the chart renders, then 3 replicas run and the ServiceMonitor scrapes the metrics Service', async () => {
  const objects = await renderChart(VALUE_SETS['three replicas with a ServiceMonitor'] ?? {});
  assert.equal(spec(findObject(objects, 'Deployment', MGMT))['replicas'], 3);
  const monitor = findObject(objects, 'ServiceMonitor', MGMT);
  const metrics = findObject(objects, 'Service', 'meshrelay-mgmt-server-metrics');
  for (const [k, v] of Object.entries(asRecord(asRecord(spec(monitor)['selector'])['matchLabels']))) {
    assert.equal(metrics.metadata.labels?.[k], v, `ServiceMonitor selector ${k} does not match the metrics Service`);
  }
  const portNames = asList(spec(metrics)['ports']).map((p) => p['name']);
  assert.deepEqual(asList(spec(monitor)['endpoints']).map((e) => e['port']), portNames);
});

test('given the agent enabled, when the chart renders, then only the agent, its RBAC and its secrets as files are rendered', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {});
  assert.equal(objects.some((o) => o.metadata.name.includes('mgmt-server') || o.metadata.name.includes('redis')), false);
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent');
  assert.equal(spec(agent)['replicas'], 2);
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_CLUSTER'), 'cluster-a');
  assert.equal(env.get('MESHRELAY_AGENT_SERVER_ADDRESS'), 'relay.example.com:9900');
  const pod = podSpecOf(agent) ?? {};
  const container = firstContainer(agent);
  const mountFor = (volume: string) => asList(container['volumeMounts']).find((m) => m['name'] === volume)?.['mountPath'];
  const secretOf = (volume: string) => asRecord(asList(pod['volumes']).find((v) => v['name'] === volume)?.['secret']);
  assert.equal(secretOf('relay-token')['secretName'], 'relay-identity-token-secret');
  assert.equal(secretOf('relay-ca')['secretName'], 'relay-root-tls-secret');
  assert.equal(env.get('MESHRELAY_AGENT_TOKEN_FILE'), `${String(mountFor('relay-token'))}/token`);
  assert.equal(env.get('MESHRELAY_AGENT_ROOT_CA_FILE'), `${String(mountFor('relay-ca'))}/ca.crt`);
  assert.equal(asRecord(container['readinessProbe'])['httpGet'] !== undefined, true);
  assert.equal(asList(container['ports'])[0]?.['containerPort'], 9977);
});

test('given the agent with kubernetes discovery, when the chart renders, then its RBAC reads workloads and Gloo kinds, writes Istio kinds and holds Leases', async () => {
  const objects = await renderChart(VALUE_SETS['agent only'] ?? {});
  const rules = asList(findObject(objects, 'ClusterRole', 'meshrelay-agent-gloo-mesh')['rules']);
  const verbsFor = (group: string, resource: string) => rules
    .filter((r) => (r['apiGroups'] as string[]).includes(group) && (r['resources'] as string[]).includes(resource))
    .flatMap((r) => r['verbs'] as string[]);
  for (const [group, resource] of [['', 'services'], ['', 'pods'], ['', 'nodes'], ['discovery.k8s.io', 'endpointslices'], ['networking.gloo.solo.io', 'virtualdestinations'],
    ['networking.gloo.solo.io', 'routetables'], ['security.policy.gloo.solo.io', 'accesspolicies'], ['resilience.policy.gloo.solo.io', 'failoverpolicies'],
    ['resilience.policy.gloo.solo.io', 'outlierdetectionpolicies'], ['resilience.policy.gloo.solo.io', 'retrytimeoutpolicies']] as const) {
    assert.deepEqual(['list', 'watch'].filter((v) => verbsFor(group, resource).includes(v)), ['list', 'watch'], `${group}/${resource}`);
  }
  for (const [group, resource] of [['networking.istio.io', 'serviceentries'], ['networking.istio.io', 'destinationrules'], ['networking.istio.io', 'virtualservices'], ['security.istio.io', 'authorizationpolicies']] as const) {
    for (const verb of ['get', 'list', 'create', 'patch', 'delete']) assert.ok(verbsFor(group, resource).includes(verb), `${verb} ${group}/${resource}`);
  }
  const leaseRules = asList(findObject(objects, 'Role', 'meshrelay-agent-leader-election')['rules']);
  assert.ok(leaseRules.some((r) => (r['resources'] as string[]).includes('leases') && (r['verbs'] as string[]).includes('update')));
});

test('given the default server, when the chart renders, then its Role covers KubernetesClusters with status, Secrets and Leases', async () => {
  const rules = asList(findObject(await renderChart({}), 'Role', MGMT)['rules']);
  const resources = rules.flatMap((r) => r['resources'] as string[]);
  for (const resource of ['kubernetesclusters', 'kubernetesclusters/status', 'secrets', 'leases']) assert.ok(resources.includes(resource), resource);
});

const BAD_VALUES: readonly (readonly [string, object, RegExp])[] = [
  ['negative replicas', { glooMgmtServer: { replicas: -1 } }, /\/glooMgmtServer\/replicas/],
  ['a safeStartWindow that is not a number', { glooMgmtServer: { safeStartWindow: 'soon' } }, /\/glooMgmtServer\/safeStartWindow/],
  ['a negative safeStartWindow', { glooMgmtServer: { safeStartWindow: -5 } }, /\/glooMgmtServer\/safeStartWindow/],
  ['the agent enabled without a cluster', { glooAgent: { enabled: true, relay: { serverAddress: 'relay.example.com:9900' } } }, /\/glooAgent\/cluster/],
  ['the agent enabled without a server address', { glooAgent: { enabled: true, cluster: 'cluster-a' } }, /\/glooAgent\/relay\/serverAddress/],
  ['an unknown top-level key', { glooMgmtSever: { replicas: 3 } }, /glooMgmtSever/],
  ['an unknown nested key', { glooMgmtServer: { replica: 3 } }, /\/glooMgmtServer.*'replica'/],
  ['a cluster name that is not a DNS label', { ...AGENT, glooAgent: { ...AGENT.glooAgent, cluster: 'Cluster_A' } }, /\/glooAgent\/cluster/],
  ['the latest image tag', { glooMgmtServer: { image: { tag: 'latest' } } }, /\/glooMgmtServer\/image\/tag/],
  ['no embedded Redis and no external one', { redis: { deploy: false } }, /\/redis\/external/],
  ['the file provider without a ConfigMap', { glooAgent: { ...AGENT.glooAgent, discovery: { provider: 'file' } } }, /\/glooAgent\/discovery\/file\/configMap/],
  ['a PDB that can never allow an eviction', { glooMgmtServer: { podDisruptionBudget: { minAvailable: 2 } } }, /glooMgmtServer\.podDisruptionBudget\.minAvailable/],
  ['two replicas without shared state', { glooMgmtServer: { state: { persistence: { enabled: false } } } }, /glooMgmtServer\.state\.persistence\.enabled/],
  ['a heartbeat timeout shorter than the interval', { glooMgmtServer: { relay: { heartbeatTimeout: 1000 } } }, /glooMgmtServer\.relay\.heartbeatTimeout/],
  ['extraEnv overriding a chart value', { glooMgmtServer: { extraEnv: [{ name: 'MESHRELAY_SAFE_MODE', value: 'true' }] } }, /glooMgmtServer\.extraEnv: MESHRELAY_SAFE_MODE/],
];

for (const [name, values, message] of BAD_VALUES) {
  test(`given ${name}, when the chart renders, then helm fails naming the field`, async () => {
    const run = await templateRun(values);
    assert.notEqual(run.code, 0, `helm accepted ${JSON.stringify(values)}`);
    assert.match(run.stderr, message);
  });
}

test('given a server install, when helm prints its notes, then they give the register command and the agent install with the chart\'s secret names', async () => {
  const run = await runHelm(['install', 'meshrelay', CHART, '--dry-run=client', '--namespace', 'gloo-mesh']);
  assert.equal(run.code, 0, run.stderr);
  const notes = run.stdout.slice(run.stdout.indexOf('NOTES:'));
  assert.match(notes, /meshctl --server http:\/\/localhost:8090 cluster register CLUSTER/);
  assert.match(notes, /create secret generic relay-identity-token-secret --from-file=token=token/);
  assert.match(notes, /create secret generic relay-root-tls-secret --from-file=ca\.crt=ca\.crt/);
  assert.match(notes, /--set glooAgent\.enabled=true/);
});
