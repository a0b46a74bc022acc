// The chart's mesh trust settings for the agent: the values reach the binary as it reads them, the
// cacerts Role sits in the namespace the agent writes cacerts to, and bad values are refused naming
// the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateAgentOptions, type AgentConfig } from '@meshrelay/agent';
import { AGENT_ENV } from './binary-options.ts';
import { findObject, objectsOfKind, renderChart, templateRun, type KubeObject } from './helm-runner.ts';
import { containerEnv } from './kube-checks.ts';

const AGENT = { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.org:9900' } };
const FILE_DISCOVERY = { provider: 'file', file: { configMap: 'manifests' } };

function withAgent(glooAgent: Record<string, unknown>): object {
  return { glooMgmtServer: { enabled: false }, glooAgent: { ...AGENT, ...glooAgent } };
}

/** The agent's config as the binary would build it from the rendered environment. */
function agentConfig(objects: readonly KubeObject[]): { env: Map<string, string>; config: AgentConfig } {
  const env = containerEnv(findObject(objects, 'Deployment', 'meshrelay-agent'), 'agent');
  const options = Object.fromEntries(
    [...env].flatMap(([name, value]) => {
      const option = AGENT_ENV.get(name);
      return option && !value.startsWith('{') ? [[option.key, value]] : [];
    }),
  );
  return { env, config: validateAgentOptions(options) };
}

test('given default values, when the chart renders, then the agent asks for its trust every 30s and issues 24h workload certificates', async () => {
  const { env, config } = agentConfig(await renderChart(withAgent({})));
  assert.equal(env.get('MESHRELAY_AGENT_TRUST_INTERVAL'), '30s');
  assert.equal(env.get('MESHRELAY_AGENT_WORKLOAD_CERT_TTL'), '24h');
  assert.equal(config.trustIntervalMs, 30_000);
  assert.equal(config.workloadCertTtlMs, 86_400_000);
});

test('given meshTrust.interval 0 and a bare workload certificate lifetime, when the chart renders, then mesh trust is off and the lifetime is in ms', async () => {
  const { config } = agentConfig(
    await renderChart(withAgent({ meshTrust: { interval: 0, workloadCertTtl: 3_600_000 } })),
  );
  assert.equal(config.trustIntervalMs, 0);
  assert.equal(config.workloadCertTtlMs, 3_600_000);
});

for (const [what, glooAgent] of [
  ['kubernetes discovery', {}],
  ['file discovery', { replicas: 1, leaderElection: { enabled: false }, discovery: FILE_DISCOVERY }],
] as const) {
  test(`given ${what} applying to Kubernetes and another Istio namespace, when the chart renders, then the cacerts Role is where the agent writes cacerts`, async () => {
    const discovery = { ...('discovery' in glooAgent ? glooAgent.discovery : {}), istioNamespace: 'istio-ca' };
    const objects = await renderChart(withAgent({ ...glooAgent, apply: 'kubernetes', discovery }));
    const { config } = agentConfig(objects);
    assert.equal(config.apply, 'kubernetes');
    assert.equal(config.istioNamespace, 'istio-ca');
    const role = findObject(objects, 'Role', 'meshrelay-agent-cacerts');
    assert.equal(role.metadata.namespace, config.istioNamespace);
    assert.equal(findObject(objects, 'RoleBinding', 'meshrelay-agent-cacerts').metadata.namespace, 'istio-ca');
  });
}

test('given file output, when the chart renders, then the agent has no cacerts Role (cacerts is a directory in its state)', async () => {
  const objects = await renderChart(withAgent({ apply: 'file' }));
  assert.equal(agentConfig(objects).config.apply, 'file');
  assert.deepEqual(
    objectsOfKind(objects, 'Role').filter((r) => r.metadata.name.endsWith('-cacerts')),
    [],
  );
});

const BAD: readonly (readonly [what: string, meshTrust: object, field: RegExp])[] = [
  ['an interval under 100 ms', { interval: 50 }, /\/glooAgent\/meshTrust\/interval/],
  ['an interval in words', { interval: 'twice a minute' }, /\/glooAgent\/meshTrust\/interval/],
  [
    'a workload certificate lifetime under a second',
    { workloadCertTtl: 500 },
    /\/glooAgent\/meshTrust\/workloadCertTtl/,
  ],
  ['an unknown key', { enabled: false }, /\/glooAgent\/meshTrust.*'enabled'/],
];

for (const [what, meshTrust, field] of BAD) {
  test(`given meshTrust with ${what}, when the chart renders, then helm fails naming the field`, async () => {
    const run = await templateRun(withAgent({ meshTrust }));
    assert.notEqual(run.code, 0, `helm accepted ${JSON.stringify(meshTrust)}`);
    assert.match(run.stderr, field);
  });
}
