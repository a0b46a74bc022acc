// The chart's values map one to one onto the environment variables the binaries read: checked
// against the binaries' own command definitions and config parsers, not against a copied list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateAgentOptions } from '@meshrelay/agent';
import { parseServerConfig } from '@meshrelay/mgmt-server';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { findObject, renderChart } from './helm-runner.ts';
import { containerEnv } from './kube-checks.ts';

/**
 * Variables the chart sets for settings the binaries do not read yet (leader election and the
 * kubernetes discovery provider). Each leaves this list, and becomes a checked mapping, once the
 * binary reads it: the last test below fails until then.
 */
const PENDING_SERVER_ENV = ['MESHRELAY_LEADER_ELECTION'];
const PENDING_AGENT_ENV = ['MESHRELAY_AGENT_DISCOVERY_PROVIDER', 'MESHRELAY_AGENT_LEASE_DURATION', 'MESHRELAY_AGENT_RENEW_DEADLINE', 'MESHRELAY_AGENT_RETRY_PERIOD', 'POD_NAME', 'POD_NAMESPACE'];
/** Options the chart leaves at the binary's default on purpose. */
const SERVER_UNMAPPED = ['MESHRELAY_RELAY_HOST', 'MESHRELAY_HTTP_HOST'];
const AGENT_UNMAPPED = ['MESHRELAY_AGENT_TOKEN']; // the token arrives as a file from a Secret
/** Variables whose value the chart derives (paths, names, the downward API) rather than copies from one value. */
const SERVER_DERIVED = ['POD_NAME', 'REDIS_URL', 'MESHRELAY_STATE_DIR', 'MESHRELAY_SERVER_HOSTS', 'MESHRELAY_ADVERTISE_ADDRESS'];
const AGENT_DERIVED = ['MESHRELAY_AGENT_TOKEN_FILE', 'MESHRELAY_AGENT_ROOT_CA_FILE', 'MESHRELAY_AGENT_MANIFESTS_DIR', 'MESHRELAY_AGENT_OUTPUT_DIR', 'MESHRELAY_AGENT_STATE_DIR'];

type Mapping = readonly [path: string, value: unknown, env: string, expected: string];

const SERVER_MAPPINGS: readonly Mapping[] = [
  ['glooMgmtServer.relay.port', 9443, 'MESHRELAY_RELAY_PORT', '9443'],
  ['glooMgmtServer.http.port', 8443, 'MESHRELAY_HTTP_PORT', '8443'],
  ['glooMgmtServer.metrics.port', 9191, 'MESHRELAY_METRICS_PORT', '9191'],
  ['glooMgmtServer.state.path', '/data/meshrelay', 'MESHRELAY_STATE_DIR', '/data/meshrelay'],
  ['glooMgmtServer.relay.advertiseAddress', 'relay.example.org:443', 'MESHRELAY_ADVERTISE_ADDRESS', 'relay.example.org:443'],
  ['glooMgmtServer.relay.trustDomain', 'mesh.example.org', 'MESHRELAY_TRUST_DOMAIN', 'mesh.example.org'],
  ['glooMgmtServer.relay.clientCertLifetime', 3600, 'MESHRELAY_CLIENT_CERT_LIFETIME', '3600'],
  ['glooMgmtServer.relay.tokenTtl', 7200, 'MESHRELAY_TOKEN_TTL', '7200'],
  ['glooMgmtServer.relay.tokenOverlap', 600, 'MESHRELAY_TOKEN_OVERLAP', '600'],
  ['glooMgmtServer.relay.maxSnapshotBytes', 33554432, 'MESHRELAY_MAX_SNAPSHOT_BYTES', '33554432'],
  ['glooMgmtServer.relay.maxResources', 1234, 'MESHRELAY_MAX_RESOURCES', '1234'],
  ['glooMgmtServer.relay.registrationMaxFailures', 9, 'MESHRELAY_REGISTRATION_MAX_FAILURES', '9'],
  ['glooMgmtServer.relay.registrationFailureWindow', 120, 'MESHRELAY_REGISTRATION_FAILURE_WINDOW', '120'],
  ['glooMgmtServer.relay.heartbeatInterval', 2000, 'MESHRELAY_HEARTBEAT_INTERVAL', '2000'],
  ['glooMgmtServer.relay.heartbeatTimeout', 7000, 'MESHRELAY_HEARTBEAT_TIMEOUT', '7000'],
  ['glooMgmtServer.relay.drainRetryAfter', 2500, 'MESHRELAY_DRAIN_RETRY_AFTER', '2500'],
  ['glooMgmtServer.translationDebounce', 250, 'MESHRELAY_TRANSLATION_DEBOUNCE', '250'],
  ['glooMgmtServer.vipCidr', '10.40.0.0/16', 'MESHRELAY_VIP_CIDR', '10.40.0.0/16'],
  ['glooMgmtServer.safeMode', true, 'MESHRELAY_SAFE_MODE', 'true'],
  ['glooMgmtServer.safeStartWindow', 0, 'MESHRELAY_SAFE_START_WINDOW', '0'],
  ['glooMgmtServer.leaderElection', false, 'MESHRELAY_LEADER_ELECTION', 'false'],
  ['glooMgmtServer.blastRadius.maxDeleteShare', 0.25, 'MESHRELAY_MAX_DELETE_SHARE', '0.25'],
  ['glooMgmtServer.blastRadius.minResources', 11, 'MESHRELAY_BLAST_RADIUS_MIN_RESOURCES', '11'],
  ['glooMgmtServer.adminToken.secretName', 'meshrelay-admin', 'MESHRELAY_ADMIN_TOKEN', JSON.stringify({ secretKeyRef: { key: 'token', name: 'meshrelay-admin' } })],
  ['glooMgmtServer.logLevel', 'debug', 'MESHRELAY_LOG_LEVEL', 'debug'],
  ['redis.external.url', 'redis://cache.example.org:6379', 'REDIS_URL', 'redis://cache.example.org:6379'],
];

const AGENT_MAPPINGS: readonly Mapping[] = [
  ['glooAgent.cluster', 'cluster-x', 'MESHRELAY_AGENT_CLUSTER', 'cluster-x'],
  ['glooAgent.relay.serverAddress', 'a.example.org:9900,b.example.org:9900', 'MESHRELAY_AGENT_SERVER_ADDRESS', 'a.example.org:9900,b.example.org:9900'],
  ['glooAgent.relay.heartbeatInterval', '2s', 'MESHRELAY_AGENT_HEARTBEAT_INTERVAL', '2s'],
  ['glooAgent.relay.heartbeatTimeout', '9s', 'MESHRELAY_AGENT_HEARTBEAT_TIMEOUT', '9s'],
  ['glooAgent.relay.maxSnapshotBytes', '32MiB', 'MESHRELAY_AGENT_MAX_SNAPSHOT_BYTES', '32MiB'],
  ['glooAgent.discovery.provider', 'file', 'MESHRELAY_AGENT_DISCOVERY_PROVIDER', 'file'],
  ['glooAgent.discovery.debounceMs', 250, 'MESHRELAY_AGENT_DEBOUNCE_MS', '250'],
  ['glooAgent.discovery.file.rescanInterval', '30s', 'MESHRELAY_AGENT_RESCAN_INTERVAL', '30s'],
  ['glooAgent.healthPort', 9988, 'MESHRELAY_AGENT_HEALTH_PORT', '9988'],
  ['glooAgent.logLevel', 'warn', 'MESHRELAY_AGENT_LOG_LEVEL', 'warn'],
  ['glooAgent.leaderElection.leaseDuration', '30s', 'MESHRELAY_AGENT_LEASE_DURATION', '30s'],
  ['glooAgent.leaderElection.renewDeadline', '20s', 'MESHRELAY_AGENT_RENEW_DEADLINE', '20s'],
  ['glooAgent.leaderElection.retryPeriod', '4s', 'MESHRELAY_AGENT_RETRY_PERIOD', '4s'],
];

/** Values with every mapping's sample value set (plus what those samples need to be valid). */
function valuesOf(mappings: readonly Mapping[], base: Record<string, unknown>): Record<string, unknown> {
  const values = structuredClone(base);
  for (const [path, value] of mappings) {
    const keys = path.split('.');
    let node = values;
    for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
    node[keys[keys.length - 1] as string] = value;
  }
  return values;
}

const SERVER_BASE = { redis: { deploy: false } };
const AGENT_BASE = { glooMgmtServer: { enabled: false }, glooAgent: { enabled: true, discovery: { file: { configMap: 'manifests' } } } };
const AGENT_DEFAULTS = { glooMgmtServer: { enabled: false }, glooAgent: { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.org:9900' } } };

async function serverEnv(values: object): Promise<Map<string, string>> {
  return containerEnv(findObject(await renderChart(values), 'Deployment', 'meshrelay-mgmt-server'), 'mgmt-server');
}

async function agentEnv(values: object): Promise<Map<string, string>> {
  return containerEnv(findObject(await renderChart(values), 'Deployment', 'meshrelay-agent'), 'agent');
}

test('given each server value set to a sample, when the chart renders, then exactly its environment variable carries it', async () => {
  const env = await serverEnv(valuesOf(SERVER_MAPPINGS, SERVER_BASE));
  for (const [path, , name, expected] of SERVER_MAPPINGS) assert.equal(env.get(name), expected, `${path} -> ${name}`);
  assert.equal(new Set(SERVER_MAPPINGS.map((m) => m[2])).size, SERVER_MAPPINGS.length, 'two values map onto one variable');
});

test('given each agent value set to a sample, when the chart renders, then exactly its environment variable carries it', async () => {
  const env = await agentEnv(valuesOf(AGENT_MAPPINGS, AGENT_BASE));
  for (const [path, , name, expected] of AGENT_MAPPINGS) assert.equal(env.get(name), expected, `${path} -> ${name}`);
  assert.equal(new Set(AGENT_MAPPINGS.map((m) => m[2])).size, AGENT_MAPPINGS.length, 'two values map onto one variable');
});

test('given the server container, when its variables are compared with meshrelay-server, then each is an option it reads and each option is mapped', async () => {
  const env = await serverEnv(valuesOf(SERVER_MAPPINGS, SERVER_BASE));
  const unknown = [...env.keys()].filter((name) => !SERVER_ENV.has(name) && !PENDING_SERVER_ENV.includes(name));
  assert.deepEqual(unknown, [], 'the chart sets variables meshrelay-server does not read');
  const unmapped = [...SERVER_ENV.keys()].filter((name) => !env.has(name) && !SERVER_UNMAPPED.includes(name));
  assert.deepEqual(unmapped, [], 'meshrelay-server options without a chart value');
  const mapped = new Set([...SERVER_MAPPINGS.map((m) => m[2]), ...SERVER_DERIVED]);
  assert.deepEqual([...env.keys()].filter((name) => !mapped.has(name)), [], 'variables set by the chart without a mapping in this test');
});

test('given the agent container, when its variables are compared with meshrelay-agent, then each is an option it reads and each option is mapped', async () => {
  const env = await agentEnv(valuesOf(AGENT_MAPPINGS, AGENT_BASE));
  const unknown = [...env.keys()].filter((name) => !AGENT_ENV.has(name) && !PENDING_AGENT_ENV.includes(name));
  assert.deepEqual(unknown, [], 'the chart sets variables meshrelay-agent does not read');
  const unmapped = [...AGENT_ENV.keys()].filter((name) => !env.has(name) && !AGENT_UNMAPPED.includes(name));
  assert.deepEqual(unmapped, [], 'meshrelay-agent options without a chart value');
  const mapped = new Set([...AGENT_MAPPINGS.map((m) => m[2]), ...AGENT_DERIVED, 'POD_NAME', 'POD_NAMESPACE']);
  assert.deepEqual([...env.keys()].filter((name) => !mapped.has(name)), [], 'variables set by the chart without a mapping in this test');
});

test('given default values, when the chart renders, then every server variable equals the binary\'s own default', async () => {
  const env = await serverEnv({});
  for (const [name, option] of SERVER_ENV) {
    if (SERVER_DERIVED.includes(name) || option.defaultValue === undefined || !env.has(name)) continue;
    assert.equal(env.get(name), option.defaultValue, `${name} (${option.flag})`);
  }
});

test('given default agent values, when the chart renders, then every agent variable equals the binary\'s own default', async () => {
  const env = await agentEnv(AGENT_DEFAULTS);
  for (const [name, option] of AGENT_ENV) {
    if (AGENT_DERIVED.includes(name) || name === 'MESHRELAY_AGENT_SERVER_ADDRESS' || option.defaultValue === undefined || !env.has(name)) continue;
    assert.equal(env.get(name), option.defaultValue, `${name} (${option.flag})`);
  }
});

test('given sample and default values, when the server config parser reads the rendered environment, then it accepts it', async () => {
  for (const values of [{}, valuesOf(SERVER_MAPPINGS, SERVER_BASE)]) {
    const env = Object.fromEntries([...await serverEnv(values)].map(([k, v]) => [k, v.startsWith('{') ? 'from-a-secret' : v]));
    const config = parseServerConfig([], env);
    assert.equal(config.relayPort, Number(env['MESHRELAY_RELAY_PORT']));
  }
});

test('given the file provider, when the agent config validator reads the rendered environment, then it accepts it', async () => {
  const env = await agentEnv(valuesOf(AGENT_MAPPINGS, AGENT_BASE));
  const options = Object.fromEntries([...env].flatMap(([name, value]) => {
    const option = AGENT_ENV.get(name);
    return option ? [[option.key, value]] : [];
  }));
  const config = validateAgentOptions(options);
  assert.deepEqual(config.serverAddresses, ['a.example.org:9900', 'b.example.org:9900']);
});

test('given the server certificate names, when the chart renders, then they cover the relay Service, the advertised host and relay.serverHosts', async () => {
  const env = await serverEnv({ glooMgmtServer: { relay: { advertiseAddress: 'relay.example.org:443', serverHosts: ['203.0.113.7'] } } });
  const hosts = (env.get('MESHRELAY_SERVER_HOSTS') ?? '').split(',');
  for (const host of ['meshrelay-relay', 'meshrelay-relay.gloo-mesh.svc', 'meshrelay-relay.gloo-mesh.svc.cluster.local', 'relay.example.org', '203.0.113.7']) {
    assert.ok(hosts.includes(host), `${host} missing from ${hosts.join(',')}`);
  }
});

test('given the pending variables, when the binaries are asked, then they still do not read them (move each out of the pending list once they do)', () => {
  assert.deepEqual(PENDING_SERVER_ENV.filter((name) => SERVER_ENV.has(name)), []);
  assert.deepEqual(PENDING_AGENT_ENV.filter((name) => AGENT_ENV.has(name)), []);
});
