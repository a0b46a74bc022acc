// The chart's security settings through the real helm binary: the admin credential wired from a
// Secret (or left to the server), explicit bind addresses and allowed API host names, and the
// optional NetworkPolicy that admits only the configured sources to each server port.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseServerConfig } from '@meshrelay/mgmt-server';
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

const MGMT = 'meshrelay-mgmt-server';

async function serverParts(values: object) {
  const objects = await renderChart(values, { namespace: 'mesh-mgmt' });
  const deployment = findObject(objects, 'Deployment', MGMT);
  return { objects, deployment, env: containerEnv(deployment, 'mgmt-server') };
}

test('given an admin token Secret, when the chart renders, then it is mounted read-only and the server reads it as MESHRELAY_ADMIN_TOKEN_FILE', async () => {
  const { objects, deployment, env } = await serverParts({
    glooMgmtServer: { adminToken: { secretName: 'ops-admin', key: 'api-token' } },
  });
  assert.deepEqual(kubeProblems(objects), []);
  assert.equal(env.get('MESHRELAY_ADMIN_TOKEN_FILE'), '/etc/meshrelay/admin-token/api-token');
  assert.equal(env.has('MESHRELAY_ADMIN_TOKEN'), false, 'the token must not sit in the pod spec as an env value');
  const volume = asList(podSpecOf(deployment)?.['volumes']).find((v) => v['name'] === 'admin-token');
  assert.deepEqual(volume?.['secret'], {
    secretName: 'ops-admin',
    defaultMode: 0o400,
    items: [{ key: 'api-token', path: 'api-token' }],
  });
  const mount = asList(firstContainer(deployment)?.['volumeMounts']).find((m) => m['name'] === 'admin-token');
  assert.deepEqual(mount, { name: 'admin-token', mountPath: '/etc/meshrelay/admin-token', readOnly: true });
});

test('given no admin token Secret, when the chart renders, then the server keeps its own (a Secret with registry kubernetes) and the chart mounts none', async () => {
  const { deployment, env } = await serverParts({});
  assert.equal(env.has('MESHRELAY_ADMIN_TOKEN_FILE'), false);
  assert.equal(env.has('MESHRELAY_ADMIN_TOKEN'), false);
  assert.equal(
    asList(podSpecOf(deployment)?.['volumes']).some((v) => v['name'] === 'admin-token'),
    false,
  );
  const rules = asList(findObject(await renderChart({}), 'Role', MGMT)['rules']);
  const verbs = rbacVerbs(rules, '', 'secrets');
  for (const verb of ['get', 'create'])
    assert.ok(verbs.includes(verb), `the server may not ${verb} its admin token Secret`);
});

test('given default values, when the chart renders, then every listener binds the pod address explicitly and the API answers to its Service names', async () => {
  const { env } = await serverParts({ glooMgmtServer: { http: { allowedHosts: ['mesh.example.org'] } } });
  assert.equal(env.get('MESHRELAY_RELAY_HOST'), '0.0.0.0');
  assert.equal(env.get('MESHRELAY_HTTP_HOST'), '0.0.0.0');
  assert.equal(env.get('MESHRELAY_METRICS_HOST'), '0.0.0.0');
  const config = parseServerConfig([], Object.fromEntries([...env].filter(([, v]) => !v.startsWith('{'))));
  assert.deepEqual(config.httpAllowedHosts, [
    'meshrelay-api',
    'meshrelay-api.mesh-mgmt',
    'meshrelay-api.mesh-mgmt.svc',
    'meshrelay-api.mesh-mgmt.svc.cluster.local',
    'mesh.example.org',
  ]);
});

test('given default values, when the chart renders, then no NetworkPolicy is created', async () => {
  assert.deepEqual(objectsOfKind(await renderChart({}), 'NetworkPolicy'), []);
});

test('given the NetworkPolicy enabled with defaults, when the chart renders, then the server pods admit the relay from anywhere, the API from the namespace and metrics from the cluster', async () => {
  const objects = await renderChart({ glooMgmtServer: { networkPolicy: { enabled: true } } });
  assert.deepEqual(kubeProblems(objects), []);
  const policy = findObject(objects, 'NetworkPolicy', MGMT);
  const spec = specOf(policy);
  const labels = podTemplateLabels(findObject(objects, 'Deployment', MGMT));
  for (const [k, v] of Object.entries(asRecord(asRecord(spec['podSelector'])['matchLabels'])))
    assert.equal(labels[k], v, `selector ${k}`);
  assert.deepEqual(spec['policyTypes'], ['Ingress']);
  const byPort = new Map(asList(spec['ingress']).map((rule) => [asList(rule['ports'])[0]?.['port'], rule['from']]));
  assert.deepEqual([...byPort.keys()], [9900, 8090, 9091]);
  assert.equal(byPort.get(9900), undefined, 'agents of other clusters must reach the relay');
  assert.deepEqual(byPort.get(8090), [{ podSelector: {} }]);
  assert.deepEqual(byPort.get(9091), [{ namespaceSelector: {} }]);
});

test('given NetworkPolicy sources per port, when the chart renders, then each port admits exactly those sources', async () => {
  const relay = [{ ipBlock: { cidr: '203.0.113.0/24' } }];
  const api = [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ops' } },
      podSelector: { matchLabels: { app: 'meshctl' } },
    },
  ];
  const metrics = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }];
  const objects = await renderChart({
    glooMgmtServer: {
      relay: { port: 9443 },
      networkPolicy: { enabled: true, relay: { from: relay }, api: { from: api }, metrics: { from: metrics } },
    },
  });
  assert.deepEqual(kubeProblems(objects), []);
  const rules = asList(specOf(findObject(objects, 'NetworkPolicy', MGMT))['ingress']);
  assert.deepEqual(
    rules.map((r) => [asList(r['ports'])[0]?.['port'], r['from']]),
    [
      [9443, relay],
      [8090, api],
      [9091, metrics],
    ],
  );
});

test('given a NetworkPolicy source that is not a peer, when the chart renders, then helm fails naming the field', async () => {
  const run = await templateRun({
    glooMgmtServer: { networkPolicy: { enabled: true, api: { from: [{ cidr: '10.0.0.0/8' }] } } },
  });
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /networkPolicy/);
});

test('given the NetworkPolicy enabled and an admin token Secret, when helm lint runs, then the chart passes', async () => {
  const run = await runHelm([
    'lint',
    '--strict',
    CHART,
    '--set',
    'glooMgmtServer.networkPolicy.enabled=true',
    '--set',
    'glooMgmtServer.adminToken.secretName=ops-admin',
  ]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
});

const notesOf = (values: readonly string[]): Promise<string> => installNotes(values);

test('given each way the admin token is kept, when helm prints its notes, then they say where it is and how meshctl gets it', async () => {
  const own = await notesOf([]);
  assert.match(own, /Secret gloo-mesh\/meshrelay-admin-token, key token/);
  assert.match(
    own,
    /export MESHRELAY_ADMIN_TOKEN="\$\(kubectl -n gloo-mesh get secret meshrelay-admin-token -o jsonpath='\{\.data\.token\}' \| base64 -d\)"/,
  );
  const given = await notesOf(['glooMgmtServer.adminToken.secretName=ops-admin']);
  assert.match(given, /Secret gloo-mesh\/ops-admin, key token/);
  assert.match(given, /get secret ops-admin -o jsonpath='\{\.data\.token\}'/);
  const file = await notesOf(['glooMgmtServer.registry=file']);
  assert.match(file, /in\n\/var\/lib\/meshrelay\/server\/admin-token \(mode 0600\)/);
  assert.match(file, /exec deploy\/meshrelay-mgmt-server -- cat \/var\/lib\/meshrelay\/server\/admin-token/);
});
