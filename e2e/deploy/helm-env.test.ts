// The chart's values map one to one onto the environment variables the binaries read: checked
// against the binaries' own command definitions and config parsers, not against a copied list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateAgentOptions } from '@meshrelay/agent';
import { parseServerConfig } from '@meshrelay/mgmt-server';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { findObject, renderChart, type TemplateOptions } from './helm-runner.ts';
import { containerEnv } from './kube-checks.ts';

/** Options the chart leaves at the binary's default on purpose. */
const SERVER_UNMAPPED = [
  'MESHRELAY_ADMIN_TOKEN', // the token arrives as a file from a Secret, or the server keeps its own
  'KUBECONFIG',
  'MESHRELAY_KUBE_CONTEXT', // in-cluster: the pod's service account
  'MESHRELAY_WORKSPACES_FILE', // a local-run file; the chart has no Workspace source yet
  'MESHRELAY_ROOT_TRUST_POLICY', // a local-run file; in a cluster the RootTrustPolicy CR is the source
];
const AGENT_UNMAPPED = [
  'MESHRELAY_AGENT_TOKEN', // the token arrives as a file from a Secret
  'KUBECONFIG',
  'MESHRELAY_AGENT_KUBE_CONTEXT', // in-cluster: the pod's service account
  'MESHRELAY_AGENT_LEASE_FILE', // the chart elects with a Lease, never a file
  'MESHRELAY_AGENT_LEASE_NAME', // the binary's meshrelay-agent-<cluster> is unique per cluster
  'MESHRELAY_AGENT_STATUS_DIR', // the chart discovers through the Kubernetes API; statuses go to the resources
  // Applying to Kubernetes, cacerts is the Secret in discovery.istioNamespace; with file output, <state-dir>/cacerts.
  'MESHRELAY_AGENT_CACERTS_DIR',
  'MESHRELAY_AGENT_WORKLOAD_CERT_DIR', // in the pod's state dir; files for workloads on the agent's own node or VM
];
/** Variables whose value the chart derives (paths, names, the downward API) rather than copies from one value. */
const SERVER_DERIVED = [
  'POD_NAME',
  'REDIS_URL',
  'MESHRELAY_REDIS_TLS_KEY_FILE',
  'MESHRELAY_NAMESPACE',
  'MESHRELAY_STATE_DIR',
  'MESHRELAY_SERVER_HOSTS',
  'MESHRELAY_ADVERTISE_ADDRESS',
  'MESHRELAY_HTTP_ALLOWED_HOSTS',
];
const AGENT_DERIVED = [
  'MESHRELAY_AGENT_REPLICA_ID',
  'MESHRELAY_AGENT_LEASE_NAMESPACE',
  'MESHRELAY_AGENT_TOKEN_FILE',
  'MESHRELAY_AGENT_ROOT_CA_FILE',
  'MESHRELAY_AGENT_MANIFESTS_DIR',
  'MESHRELAY_AGENT_OUTPUT_DIR',
  'MESHRELAY_AGENT_STATE_DIR',
  'MESHRELAY_AGENT_CREDENTIALS_NAMESPACE',
];
/** Where the chart's default differs from the binary's on purpose: in a cluster, the cluster's API is the backend. */
const SERVER_CHART_DEFAULTS: Readonly<Record<string, string>> = {
  MESHRELAY_REGISTRY: 'kubernetes',
  // The binary serves its API and metrics on loopback only; in a pod the Services and probes need the pod's address.
  MESHRELAY_HTTP_HOST: '0.0.0.0',
  MESHRELAY_METRICS_HOST: '0.0.0.0',
};
const AGENT_CHART_DEFAULTS: Readonly<Record<string, string>> = {
  MESHRELAY_AGENT_DISCOVERY_PROVIDER: 'kubernetes',
  MESHRELAY_AGENT_APPLY: 'kubernetes',
  MESHRELAY_AGENT_LEADER_ELECTION: 'kubernetes',
};

type Mapping = readonly [path: string, value: unknown, env: string, expected: string];

const SERVER_MAPPINGS: readonly Mapping[] = [
  ['glooMgmtServer.relay.host', '::', 'MESHRELAY_RELAY_HOST', '::'],
  ['glooMgmtServer.relay.port', 9443, 'MESHRELAY_RELAY_PORT', '9443'],
  ['glooMgmtServer.http.host', '10.0.0.7', 'MESHRELAY_HTTP_HOST', '10.0.0.7'],
  ['glooMgmtServer.metrics.host', '127.0.0.1', 'MESHRELAY_METRICS_HOST', '127.0.0.1'],
  ['glooMgmtServer.http.port', 8443, 'MESHRELAY_HTTP_PORT', '8443'],
  ['glooMgmtServer.metrics.port', 9191, 'MESHRELAY_METRICS_PORT', '9191'],
  ['glooMgmtServer.registry', 'file', 'MESHRELAY_REGISTRY', 'file'],
  ['glooMgmtServer.state.path', '/data/meshrelay', 'MESHRELAY_STATE_DIR', '/data/meshrelay'],
  [
    'glooMgmtServer.relay.advertiseAddress',
    'relay.example.org:443',
    'MESHRELAY_ADVERTISE_ADDRESS',
    'relay.example.org:443',
  ],
  ['glooMgmtServer.relay.trustDomain', 'mesh.example.org', 'MESHRELAY_TRUST_DOMAIN', 'mesh.example.org'],
  ['glooMgmtServer.relay.clientCertLifetime', '12h', 'MESHRELAY_CLIENT_CERT_LIFETIME', '12h'],
  ['glooMgmtServer.relay.tokenTtl', '7d', 'MESHRELAY_TOKEN_TTL', '7d'],
  ['glooMgmtServer.relay.tokenOverlap', 600, 'MESHRELAY_TOKEN_OVERLAP', '600'],
  ['glooMgmtServer.relay.maxSnapshotBytes', '32MiB', 'MESHRELAY_MAX_SNAPSHOT_BYTES', '32MiB'],
  ['glooMgmtServer.relay.maxDeltaPatchOps', 300, 'MESHRELAY_MAX_DELTA_PATCH_OPS', '300'],
  ['glooMgmtServer.relay.maxResourcePatchOps', 200, 'MESHRELAY_MAX_RESOURCE_PATCH_OPS', '200'],
  ['glooMgmtServer.relay.maxDeltaPatchWork', 5000000, 'MESHRELAY_MAX_DELTA_PATCH_WORK', '5000000'],
  ['glooMgmtServer.relay.maxResources', 1234, 'MESHRELAY_MAX_RESOURCES', '1234'],
  ['glooMgmtServer.relay.snapshotTransferTimeout', 30000, 'MESHRELAY_SNAPSHOT_TRANSFER_TIMEOUT', '30000'],
  ['glooMgmtServer.relay.maxConnectionsPerPeer', 200, 'MESHRELAY_MAX_CONNECTIONS_PER_PEER', '200'],
  ['glooMgmtServer.relay.tlsHandshakeTimeout', 5000, 'MESHRELAY_TLS_HANDSHAKE_TIMEOUT', '5000'],
  ['glooMgmtServer.relay.registrationMaxFailures', 9, 'MESHRELAY_REGISTRATION_MAX_FAILURES', '9'],
  ['glooMgmtServer.relay.registrationFailureWindow', '2m', 'MESHRELAY_REGISTRATION_FAILURE_WINDOW', '2m'],
  ['glooMgmtServer.relay.heartbeatInterval', '2s', 'MESHRELAY_HEARTBEAT_INTERVAL', '2s'],
  ['glooMgmtServer.relay.heartbeatTimeout', 7000, 'MESHRELAY_HEARTBEAT_TIMEOUT', '7000'],
  ['glooMgmtServer.relay.drainRetryAfter', 2500, 'MESHRELAY_DRAIN_RETRY_AFTER', '2500'],
  ['glooMgmtServer.relay.admitRate', 120, 'MESHRELAY_RELAY_ADMIT_RATE', '120'],
  ['glooMgmtServer.translationDebounce', '250ms', 'MESHRELAY_TRANSLATION_DEBOUNCE', '250ms'],
  ['glooMgmtServer.memoryReclaimIdle', '30s', 'MESHRELAY_MEMORY_RECLAIM_IDLE', '30s'],
  ['glooMgmtServer.interestScopedOutputs', true, 'MESHRELAY_INTEREST_SCOPED_OUTPUTS', 'true'],
  ['glooMgmtServer.interestIdle', '20m', 'MESHRELAY_INTEREST_IDLE', '20m'],
  ['glooMgmtServer.trustTick', '2s', 'MESHRELAY_TRUST_TICK', '2s'],
  ['glooMgmtServer.vipCidr', '10.40.0.0/16', 'MESHRELAY_VIP_CIDR', '10.40.0.0/16'],
  ['glooMgmtServer.vipCidrRoundRobin', '10.41.0.0/16', 'MESHRELAY_VIP_CIDR_ROUND_ROBIN', '10.41.0.0/16'],
  ['glooMgmtServer.vipCidrClosest', '10.42.0.0/16', 'MESHRELAY_VIP_CIDR_CLOSEST', '10.42.0.0/16'],
  ['glooMgmtServer.instanceCidr', '10.43.0.0/16', 'MESHRELAY_INSTANCE_CIDR', '10.43.0.0/16'],
  ['glooMgmtServer.safeMode', true, 'MESHRELAY_SAFE_MODE', 'true'],
  ['glooMgmtServer.safeStartWindow', 0, 'MESHRELAY_SAFE_START_WINDOW', '0'],
  ['glooMgmtServer.blastRadius.maxDeleteShare', 0.25, 'MESHRELAY_MAX_DELETE_SHARE', '0.25'],
  ['glooMgmtServer.blastRadius.minResources', 11, 'MESHRELAY_BLAST_RADIUS_MIN_RESOURCES', '11'],
  [
    'glooMgmtServer.adminToken.secretName',
    'meshrelay-admin',
    'MESHRELAY_ADMIN_TOKEN_FILE',
    '/etc/meshrelay/admin-token/token',
  ],
  ['glooMgmtServer.logLevel', 'debug', 'MESHRELAY_LOG_LEVEL', 'debug'],
  ['redis.external.url', 'redis://cache.example.org:6379', 'REDIS_URL', 'redis://cache.example.org:6379'],
  ['redis.external.username', 'meshrelay', 'MESHRELAY_REDIS_USERNAME', 'meshrelay'],
  [
    'redis.external.passwordSecret.name',
    'redis-auth',
    'MESHRELAY_REDIS_PASSWORD_FILE',
    '/etc/meshrelay/redis-password/password',
  ],
  ['redis.external.tls.enabled', true, 'MESHRELAY_REDIS_TLS', 'true'],
  ['redis.external.tls.secretName', 'redis-tls', 'MESHRELAY_REDIS_TLS_CA_FILE', '/etc/meshrelay/redis-tls/ca.crt'],
  ['redis.external.tls.clientCertificate', true, 'MESHRELAY_REDIS_TLS_CERT_FILE', '/etc/meshrelay/redis-tls/tls.crt'],
  ['redis.external.tls.serverName', 'redis.example.org', 'MESHRELAY_REDIS_TLS_SERVER_NAME', 'redis.example.org'],
];

/** Sentinel replaces the URL, so its values render in a second sample. */
const SERVER_SENTINEL_MAPPINGS: readonly Mapping[] = [
  [
    'redis.external.sentinel.hosts',
    ['s1.example.org:26379', '[fd00::1]:26379'],
    'MESHRELAY_REDIS_SENTINELS',
    's1.example.org:26379,[fd00::1]:26379',
  ],
  ['redis.external.sentinel.masterName', 'mymaster', 'MESHRELAY_REDIS_SENTINEL_MASTER', 'mymaster'],
  [
    'redis.external.sentinel.passwordSecret.name',
    'sentinel-auth',
    'MESHRELAY_REDIS_SENTINEL_PASSWORD_FILE',
    '/etc/meshrelay/redis-sentinel-password/password',
  ],
];

const AGENT_COMMON_MAPPINGS: readonly Mapping[] = [
  ['glooAgent.cluster', 'cluster-x', 'MESHRELAY_AGENT_CLUSTER', 'cluster-x'],
  [
    'glooAgent.relay.serverAddress',
    'a.example.org:9900,b.example.org:9900',
    'MESHRELAY_AGENT_SERVER_ADDRESS',
    'a.example.org:9900,b.example.org:9900',
  ],
  ['glooAgent.relay.heartbeatInterval', '2s', 'MESHRELAY_AGENT_HEARTBEAT_INTERVAL', '2s'],
  ['glooAgent.relay.heartbeatTimeout', '9s', 'MESHRELAY_AGENT_HEARTBEAT_TIMEOUT', '9s'],
  ['glooAgent.relay.maxSnapshotBytes', '32MiB', 'MESHRELAY_AGENT_MAX_SNAPSHOT_BYTES', '32MiB'],
  ['glooAgent.relay.credentialsSecret', 'agent-client-tls', 'MESHRELAY_AGENT_CREDENTIALS_SECRET', 'agent-client-tls'],
  ['glooAgent.discovery.debounceMs', '250ms', 'MESHRELAY_AGENT_DEBOUNCE_MS', '250ms'],
  ['glooAgent.healthPort', 9988, 'MESHRELAY_AGENT_HEALTH_PORT', '9988'],
  ['glooAgent.accessLog.port', 9989, 'MESHRELAY_AGENT_ACCESS_LOG_PORT', '9989'],
  ['glooAgent.healthHost', '127.0.0.1', 'MESHRELAY_AGENT_HEALTH_HOST', '127.0.0.1'],
  ['glooAgent.accessLog.host', '127.0.0.1', 'MESHRELAY_AGENT_ACCESS_LOG_HOST', '127.0.0.1'],
  ['glooAgent.xds.host', '0.0.0.0', 'MESHRELAY_AGENT_XDS_HOST', '0.0.0.0'],
  ['glooAgent.xds.port', 15010, 'MESHRELAY_AGENT_XDS_PORT', '15010'],
  ['glooAgent.interestRenewInterval', '1m', 'MESHRELAY_AGENT_INTEREST_RENEW_INTERVAL', '1m'],
  ['glooAgent.meshTrust.interval', '10s', 'MESHRELAY_AGENT_TRUST_INTERVAL', '10s'],
  ['glooAgent.meshTrust.workloadCertTtl', '12h', 'MESHRELAY_AGENT_WORKLOAD_CERT_TTL', '12h'],
  ['glooAgent.xds.socket', '/var/run/meshrelay/xds.sock', 'MESHRELAY_AGENT_XDS_SOCKET', '/var/run/meshrelay/xds.sock'],
  ['glooAgent.logLevel', 'warn', 'MESHRELAY_AGENT_LOG_LEVEL', 'warn'],
];

/**
 * Two sample sets, since the file-only and kubernetes-only settings never render together:
 * kubernetes discovery with file output and an elected leader; file discovery with kubernetes
 * apply and one replica without election.
 */
const AGENT_SAMPLES: Readonly<
  Record<string, { readonly mappings: readonly Mapping[]; readonly base: Record<string, unknown> }>
> = {
  'kubernetes discovery': {
    base: { glooMgmtServer: { enabled: false }, glooAgent: { enabled: true, replicas: 2 } },
    mappings: [
      ...AGENT_COMMON_MAPPINGS,
      ['glooAgent.discovery.provider', 'kubernetes', 'MESHRELAY_AGENT_DISCOVERY_PROVIDER', 'kubernetes'],
      [
        'glooAgent.discovery.watchNamespaces',
        ['team-a', 'team-b'],
        'MESHRELAY_AGENT_WATCH_NAMESPACES',
        'team-a,team-b',
      ],
      ['glooAgent.discovery.istioNamespace', 'istio-config', 'MESHRELAY_AGENT_ISTIO_NAMESPACE', 'istio-config'],
      ['glooAgent.apply', 'file', 'MESHRELAY_AGENT_APPLY', 'file'],
      ['glooAgent.leaderElection.enabled', true, 'MESHRELAY_AGENT_LEADER_ELECTION', 'kubernetes'],
      ['glooAgent.leaderElection.leaseDuration', '30s', 'MESHRELAY_AGENT_LEASE_DURATION', '30s'],
      ['glooAgent.leaderElection.renewDeadline', '20s', 'MESHRELAY_AGENT_RENEW_DEADLINE', '20s'],
      ['glooAgent.leaderElection.retryPeriod', '4s', 'MESHRELAY_AGENT_RETRY_PERIOD', '4s'],
    ],
  },
  'file discovery': {
    base: {
      glooMgmtServer: { enabled: false },
      glooAgent: { enabled: true, replicas: 1, discovery: { file: { configMap: 'manifests' } } },
    },
    mappings: [
      ...AGENT_COMMON_MAPPINGS,
      ['glooAgent.discovery.provider', 'file', 'MESHRELAY_AGENT_DISCOVERY_PROVIDER', 'file'],
      ['glooAgent.discovery.file.rescanInterval', '30s', 'MESHRELAY_AGENT_RESCAN_INTERVAL', '30s'],
      ['glooAgent.discovery.file.maxFileBytes', '4MiB', 'MESHRELAY_AGENT_MAX_MANIFEST_FILE_BYTES', '4MiB'],
      ['glooAgent.discovery.file.maxTotalBytes', '32MiB', 'MESHRELAY_AGENT_MAX_MANIFESTS_BYTES', '32MiB'],
      ['glooAgent.discovery.file.followExternalSymlinks', true, 'MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS', 'true'],
      ['glooAgent.apply', 'kubernetes', 'MESHRELAY_AGENT_APPLY', 'kubernetes'],
      // Without Kubernetes discovery the Istio namespace still names where cacerts is written.
      ['glooAgent.discovery.istioNamespace', 'istio-ca', 'MESHRELAY_AGENT_ISTIO_NAMESPACE', 'istio-ca'],
      ['glooAgent.leaderElection.enabled', false, 'MESHRELAY_AGENT_LEADER_ELECTION', 'none'],
    ],
  },
};

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
const AGENT_DEFAULTS = {
  glooMgmtServer: { enabled: false },
  glooAgent: { enabled: true, cluster: 'cluster-a', relay: { serverAddress: 'relay.example.org:9900' } },
};

async function serverEnv(values: object, options: TemplateOptions = {}): Promise<Map<string, string>> {
  return containerEnv(
    findObject(await renderChart(values, options), 'Deployment', 'meshrelay-mgmt-server'),
    'mgmt-server',
  );
}

async function agentEnv(values: object, options: TemplateOptions = {}): Promise<Map<string, string>> {
  return containerEnv(findObject(await renderChart(values, options), 'Deployment', 'meshrelay-agent'), 'agent');
}

/** The rendered variables as a process would see them; a valueFrom entry stands in as plain text. */
function asProcessEnv(env: ReadonlyMap<string, string>): Record<string, string> {
  return Object.fromEntries([...env].map(([k, v]) => [k, v.startsWith('{') ? 'from-the-pod' : v]));
}

test('given each server value set to a sample, when the chart renders, then exactly its environment variable carries it', async () => {
  const env = await serverEnv(valuesOf(SERVER_MAPPINGS, SERVER_BASE));
  for (const [path, , name, expected] of SERVER_MAPPINGS) assert.equal(env.get(name), expected, `${path} -> ${name}`);
  assert.equal(
    new Set(SERVER_MAPPINGS.map((m) => m[2])).size,
    SERVER_MAPPINGS.length,
    'two values map onto one variable',
  );
});

for (const [sample, { mappings, base }] of Object.entries(AGENT_SAMPLES)) {
  test(`given each agent value set to a sample (${sample}), when the chart renders, then exactly its environment variable carries it`, async () => {
    const env = await agentEnv(valuesOf(mappings, base));
    for (const [path, , name, expected] of mappings) assert.equal(env.get(name), expected, `${path} -> ${name}`);
    assert.equal(new Set(mappings.map((m) => m[2])).size, mappings.length, 'two values map onto one variable');
  });
}

test('given the Redis Sentinel values set to a sample, when the chart renders, then they replace REDIS_URL and the server accepts them', async () => {
  const env = await serverEnv(valuesOf(SERVER_SENTINEL_MAPPINGS, SERVER_BASE));
  for (const [path, , name, expected] of SERVER_SENTINEL_MAPPINGS)
    assert.equal(env.get(name), expected, `${path} -> ${name}`);
  assert.equal(env.has('REDIS_URL'), false, 'the sentinels name the primary; no URL beside them');
  const config = parseServerConfig([], asProcessEnv(env));
  assert.deepEqual(config.redisSentinels, ['s1.example.org:26379', '[fd00::1]:26379']);
});

test('given the server container, when its variables are compared with meshrelay-server, then each is an option it reads and each option is mapped', async () => {
  const env = await serverEnv(valuesOf(SERVER_MAPPINGS, SERVER_BASE));
  const sentinelEnv = await serverEnv(valuesOf(SERVER_SENTINEL_MAPPINGS, SERVER_BASE));
  assert.deepEqual(
    [...env.keys(), ...sentinelEnv.keys()].filter((name) => !SERVER_ENV.has(name)),
    [],
    'the chart sets variables meshrelay-server does not read',
  );
  const unmapped = [...SERVER_ENV.keys()].filter(
    (name) => !env.has(name) && !sentinelEnv.has(name) && !SERVER_UNMAPPED.includes(name),
  );
  assert.deepEqual(unmapped, [], 'meshrelay-server options without a chart value');
  const mapped = new Set([...SERVER_MAPPINGS.map((m) => m[2]), ...SERVER_DERIVED]);
  assert.deepEqual(
    [...env.keys()].filter((name) => !mapped.has(name)),
    [],
    'variables set by the chart without a mapping in this test',
  );
  assert.deepEqual(
    SERVER_UNMAPPED.filter((name) => !SERVER_ENV.has(name)),
    [],
    'an unmapped name that is not an option',
  );
});

test('given the agent container, when its variables are compared with meshrelay-agent, then each is an option it reads and each option is mapped', async () => {
  const seen = new Set<string>();
  for (const [sample, { mappings, base }] of Object.entries(AGENT_SAMPLES)) {
    const env = await agentEnv(valuesOf(mappings, base));
    assert.deepEqual(
      [...env.keys()].filter((name) => !AGENT_ENV.has(name)),
      [],
      `${sample}: the chart sets variables meshrelay-agent does not read`,
    );
    const mapped = new Set([...mappings.map((m) => m[2]), ...AGENT_DERIVED]);
    assert.deepEqual(
      [...env.keys()].filter((name) => !mapped.has(name)),
      [],
      `${sample}: variables set by the chart without a mapping in this test`,
    );
    for (const name of env.keys()) seen.add(name);
  }
  const unmapped = [...AGENT_ENV.keys()].filter((name) => !seen.has(name) && !AGENT_UNMAPPED.includes(name));
  assert.deepEqual(unmapped, [], 'meshrelay-agent options without a chart value');
  assert.deepEqual(
    AGENT_UNMAPPED.filter((name) => !AGENT_ENV.has(name)),
    [],
    'an unmapped name that is not an option',
  );
});

test("given default values, when the chart renders, then every server variable equals the binary's own default or the chart's deliberate one", async () => {
  const env = await serverEnv({});
  for (const [name, option] of SERVER_ENV) {
    const expected = SERVER_CHART_DEFAULTS[name] ?? option.defaultValue;
    if (SERVER_DERIVED.includes(name) || expected === undefined || !env.has(name)) continue;
    assert.equal(env.get(name), expected, `${name} (${option.flag})`);
  }
  for (const [name, value] of Object.entries(SERVER_CHART_DEFAULTS)) assert.equal(env.get(name), value, name);
});

test("given default agent values, when the chart renders, then every agent variable equals the binary's own default or the chart's deliberate one", async () => {
  const env = await agentEnv(AGENT_DEFAULTS);
  for (const [name, option] of AGENT_ENV) {
    const expected = AGENT_CHART_DEFAULTS[name] ?? option.defaultValue;
    if (
      AGENT_DERIVED.includes(name) ||
      name === 'MESHRELAY_AGENT_SERVER_ADDRESS' ||
      expected === undefined ||
      !env.has(name)
    )
      continue;
    assert.equal(env.get(name), expected, `${name} (${option.flag})`);
  }
  for (const [name, value] of Object.entries(AGENT_CHART_DEFAULTS)) assert.equal(env.get(name), value, name);
});

test('given sample and default values, when the server config parser reads the rendered environment, then it accepts it', async () => {
  for (const values of [{}, valuesOf(SERVER_MAPPINGS, SERVER_BASE)]) {
    const env = asProcessEnv(await serverEnv(values));
    const config = parseServerConfig([], env);
    assert.equal(config.relayPort, Number(env['MESHRELAY_RELAY_PORT']));
    assert.equal(config.registry, env['MESHRELAY_REGISTRY']);
  }
});

test('given sample and default values, when the agent config validator reads the rendered environment, then it accepts it', async () => {
  const valueSets = [
    AGENT_DEFAULTS,
    ...Object.values(AGENT_SAMPLES).map(({ mappings, base }) => valuesOf(mappings, base)),
  ];
  for (const values of valueSets) {
    const env = asProcessEnv(await agentEnv(values));
    const options = Object.fromEntries(
      Object.entries(env).flatMap(([name, value]) => {
        const option = AGENT_ENV.get(name);
        return option ? [[option.key, value]] : [];
      }),
    );
    const config = validateAgentOptions(options);
    assert.equal(config.cluster, env['MESHRELAY_AGENT_CLUSTER']);
    assert.equal(config.leaderElection, env['MESHRELAY_AGENT_LEADER_ELECTION']);
    assert.equal(config.apply, env['MESHRELAY_AGENT_APPLY']);
  }
});

test("given a release namespace, when the chart renders, then the server's registry namespace and the agents' Lease and credentials Secret namespaces are that namespace", async () => {
  const options = { namespace: 'mesh-system' };
  assert.equal((await serverEnv({}, options)).get('MESHRELAY_NAMESPACE'), 'mesh-system');
  assert.equal((await agentEnv(AGENT_DEFAULTS, options)).get('MESHRELAY_AGENT_LEASE_NAMESPACE'), 'mesh-system');
  assert.equal((await agentEnv(AGENT_DEFAULTS, options)).get('MESHRELAY_AGENT_CREDENTIALS_NAMESPACE'), 'mesh-system');
});

test("given the agent pods, when the chart renders, then each replica's lease identity is its pod name", async () => {
  const env = await agentEnv(AGENT_DEFAULTS);
  assert.deepEqual(JSON.parse(env.get('MESHRELAY_AGENT_REPLICA_ID') ?? 'null'), {
    fieldRef: { fieldPath: 'metadata.name' },
  });
});

test('given the server certificate names, when the chart renders, then they cover the relay Service, the advertised host and relay.serverHosts', async () => {
  const env = await serverEnv({
    glooMgmtServer: { relay: { advertiseAddress: 'relay.example.org:443', serverHosts: ['203.0.113.7'] } },
  });
  const hosts = (env.get('MESHRELAY_SERVER_HOSTS') ?? '').split(',');
  for (const host of [
    'meshrelay-relay',
    'meshrelay-relay.gloo-mesh.svc',
    'meshrelay-relay.gloo-mesh.svc.cluster.local',
    'relay.example.org',
    '203.0.113.7',
  ]) {
    assert.ok(hosts.includes(host), `${host} missing from ${hosts.join(',')}`);
  }
});
