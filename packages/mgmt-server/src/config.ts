import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { DNS_LABEL, MeshrelayError, parseByteSize, parseDuration } from '@meshrelay/api';
import { checkVipPools, type VipPools } from '@meshrelay/translator';
import { assertAdminToken } from './admin-credential.ts';
import { assertRedisConfig } from './redis-endpoint-config.ts';

/** The management server's one typed configuration, from flags and environment variables. */
export interface ServerConfig {
  readonly relayHost: string;
  readonly relayPort: number;
  readonly httpHost: string;
  readonly httpPort: number;
  /** Host names (besides loopback and this machine's names) a browser may address the API and UI by. */
  readonly httpAllowedHosts: readonly string[];
  readonly metricsHost: string;
  readonly metricsPort: number;
  readonly stateDir: string;
  readonly redisUrl: string | undefined;
  /** Sentinels (host:port) to ask for the primary; with redisSentinelMaster instead of redisUrl. */
  readonly redisSentinels: readonly string[];
  readonly redisSentinelMaster: string | undefined;
  readonly redisSentinelPasswordFile: string | undefined;
  readonly redisUsername: string | undefined;
  readonly redisPasswordFile: string | undefined;
  readonly redisTls: boolean;
  readonly redisTlsCaFile: string | undefined;
  readonly redisTlsCertFile: string | undefined;
  readonly redisTlsKeyFile: string | undefined;
  readonly redisTlsServerName: string | undefined;
  readonly replicaName: string;
  readonly trustDomain: string;
  readonly serverHosts: readonly string[];
  readonly advertiseAddress: string | undefined;
  readonly clientCertLifetimeSeconds: number;
  readonly tokenTtlSeconds: number;
  readonly tokenOverlapSeconds: number;
  readonly maxSnapshotBytes: number;
  readonly maxResources: number;
  /** RFC 6902 operations in one input delta's patches, and in one resource's. */
  readonly maxDeltaPatchOps: number;
  readonly maxResourcePatchOps: number;
  /** Items one input delta's patches may touch (walks, copies, array shifts). */
  readonly maxDeltaPatchWork: number;
  readonly snapshotTransferTimeoutMs: number;
  readonly maxConnectionsPerPeer: number;
  readonly tlsHandshakeTimeoutMs: number;
  readonly registrationMaxFailures: number;
  readonly registrationFailureWindowSeconds: number;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly translationDebounceMs: number;
  /** A cluster's output carries a VirtualDestination only while the cluster has an interest in it (§17). */
  readonly interestScopedOutputs: boolean;
  /** A learned interest not renewed for this long expires. */
  readonly interestIdleMs: number;
  /** Idle time after which heap growth since the last reclaim is collected; 0 = never. */
  readonly memoryReclaimIdleMs: number;
  readonly vipCidr: string;
  /** Pools of the round-robin and closest addresses and of instance addresses (one range per kind). */
  readonly vipCidrRoundRobin: string;
  readonly vipCidrClosest: string;
  readonly instanceCidr: string;
  readonly safeMode: boolean;
  readonly safeStartWindowSeconds: number;
  readonly drainRetryAfterMs: number;
  readonly relayAdmitRate: number;
  readonly maxDeleteShare: number;
  readonly blastRadiusMinResources: number;
  /** The admin credential given by the operator; unset = the one in the durable state (created on first start). */
  readonly adminToken: string | undefined;
  readonly adminTokenFile: string | undefined;
  readonly logLevel: string;
  /** Where the registry, token hashes, relay CA and VIP allocations live. */
  readonly registry: 'file' | 'kubernetes';
  /** The management namespace (kubernetes registry). */
  readonly namespace: string;
  /** Kubeconfig file (kubernetes registry); unset = in-cluster service account. */
  readonly kubeconfig: string | undefined;
  readonly kubeContext: string | undefined;
  /**
   * YAML file of the management plane's Gloo Workspaces; unset = Workspace CRs (kubernetes registry) or one implicit
   * workspace.
   */
  readonly workspacesFile: string | undefined;
  /** YAML file of the RootTrustPolicy in force; unset = the RootTrustPolicy CR (kubernetes registry) or none. */
  readonly rootTrustPolicyFile: string | undefined;
  /** How often the mesh trust rotation rules are evaluated. */
  readonly trustTickMs: number;
}

/**
 * duration: with a unit (200ms, 5s, 3m) or bare milliseconds, in ms; seconds: with a unit
 * (90s, 3m, 24h, 7d) or bare seconds (as these flags were always counted), in seconds;
 * size: with a unit (16MiB) or bare bytes.
 */
type Kind = 'string' | 'port' | 'count' | 'bool' | 'list' | 'share' | 'duration' | 'seconds' | 'size';

interface Spec {
  readonly key: keyof ServerConfig;
  readonly flag: string;
  readonly env: string;
  readonly kind: Kind;
  readonly description: string;
  readonly default?: string;
}

const SPECS: readonly Spec[] = [
  {
    key: 'relayHost',
    flag: 'relay-host',
    env: 'MESHRELAY_RELAY_HOST',
    kind: 'string',
    default: '0.0.0.0',
    description:
      'address the relay gRPC port binds to; exposes registration (relay token) and push/pull (mTLS) to agents, so every address by default',
  },
  {
    key: 'relayPort',
    flag: 'relay-port',
    env: 'MESHRELAY_RELAY_PORT',
    kind: 'port',
    default: '9900',
    description: 'relay gRPC port (registration, push, pull); 0 picks a free port',
  },
  {
    key: 'httpHost',
    flag: 'http-host',
    env: 'MESHRELAY_HTTP_HOST',
    kind: 'string',
    default: '127.0.0.1',
    description:
      'address the HTTP API + web UI bind to; exposes the admin API (admin token) and open /healthz, /readyz; loopback by default (local admin only), 0.0.0.0 to serve other machines',
  },
  {
    key: 'httpPort',
    flag: 'http-port',
    env: 'MESHRELAY_HTTP_PORT',
    kind: 'port',
    default: '8090',
    description: 'HTTP API + web UI port',
  },
  {
    key: 'httpAllowedHosts',
    flag: 'http-allowed-hosts',
    env: 'MESHRELAY_HTTP_ALLOWED_HOSTS',
    kind: 'list',
    default: '',
    description:
      "extra host names the API and UI answer to (comma-separated); loopback, this machine's name, --server-hosts and the advertised host are always allowed; any other Host header is refused (DNS rebinding)",
  },
  {
    key: 'metricsHost',
    flag: 'metrics-host',
    env: 'MESHRELAY_METRICS_HOST',
    kind: 'string',
    default: '127.0.0.1',
    description:
      'address the Prometheus /metrics port binds to; exposes metrics (cluster names, counts) without authentication; loopback by default, 0.0.0.0 for a scraper on another machine',
  },
  {
    key: 'metricsPort',
    flag: 'metrics-port',
    env: 'MESHRELAY_METRICS_PORT',
    kind: 'port',
    default: '9091',
    description: 'Prometheus /metrics port',
  },
  {
    key: 'stateDir',
    flag: 'state-dir',
    env: 'MESHRELAY_STATE_DIR',
    kind: 'string',
    default: '.meshrelay/server',
    description: 'durable state: cluster registry, token hashes, relay CA, VIP allocations',
  },
  {
    key: 'redisUrl',
    flag: 'redis-url',
    env: 'REDIS_URL',
    kind: 'string',
    description: 'Redis shared by all replicas (e.g. redis://127.0.0.1:6379); unset = memory only',
  },
  {
    key: 'redisSentinels',
    flag: 'redis-sentinels',
    env: 'MESHRELAY_REDIS_SENTINELS',
    kind: 'list',
    default: '',
    description:
      'Redis Sentinel processes to ask for the primary (host:port, comma-separated); with --redis-sentinel-master, instead of --redis-url',
  },
  {
    key: 'redisSentinelMaster',
    flag: 'redis-sentinel-master',
    env: 'MESHRELAY_REDIS_SENTINEL_MASTER',
    kind: 'string',
    description: 'name the sentinels monitor the primary under (sentinel monitor NAME ...)',
  },
  {
    key: 'redisSentinelPasswordFile',
    flag: 'redis-sentinel-password-file',
    env: 'MESHRELAY_REDIS_SENTINEL_PASSWORD_FILE',
    kind: 'string',
    description: "file holding the sentinels' password (requirepass of the sentinels), e.g. a mounted Secret",
  },
  {
    key: 'redisUsername',
    flag: 'redis-username',
    env: 'MESHRELAY_REDIS_USERNAME',
    kind: 'string',
    description: 'Redis ACL user (default: the URL\'s, else "default")',
  },
  {
    key: 'redisPasswordFile',
    flag: 'redis-password-file',
    env: 'MESHRELAY_REDIS_PASSWORD_FILE',
    kind: 'string',
    description: 'file holding the Redis password (e.g. a mounted Secret); wins over a password in --redis-url',
  },
  {
    key: 'redisTls',
    flag: 'redis-tls',
    env: 'MESHRELAY_REDIS_TLS',
    kind: 'bool',
    default: 'false',
    description: 'speak TLS to Redis and the sentinels (a rediss:// URL implies it)',
  },
  {
    key: 'redisTlsCaFile',
    flag: 'redis-tls-ca-file',
    env: 'MESHRELAY_REDIS_TLS_CA_FILE',
    kind: 'string',
    description: "CA bundle (PEM) that verifies Redis's certificate; unset = the system's roots",
  },
  {
    key: 'redisTlsCertFile',
    flag: 'redis-tls-cert-file',
    env: 'MESHRELAY_REDIS_TLS_CERT_FILE',
    kind: 'string',
    description: 'client certificate (PEM) for a Redis that asks for one; with --redis-tls-key-file',
  },
  {
    key: 'redisTlsKeyFile',
    flag: 'redis-tls-key-file',
    env: 'MESHRELAY_REDIS_TLS_KEY_FILE',
    kind: 'string',
    description: 'private key (PEM) of --redis-tls-cert-file',
  },
  {
    key: 'redisTlsServerName',
    flag: 'redis-tls-server-name',
    env: 'MESHRELAY_REDIS_TLS_SERVER_NAME',
    kind: 'string',
    description: "name Redis's certificate is checked against when it differs from the host dialled",
  },
  {
    key: 'replicaName',
    flag: 'replica-name',
    env: 'POD_NAME',
    kind: 'string',
    default: `${hostname()}-${process.pid}`,
    description: 'this replica\'s name (the "pod" label on metrics)',
  },
  {
    key: 'trustDomain',
    flag: 'trust-domain',
    env: 'MESHRELAY_TRUST_DOMAIN',
    kind: 'string',
    default: 'meshrelay.local',
    description: 'SPIFFE trust domain of relay client certificates',
  },
  {
    key: 'serverHosts',
    flag: 'server-hosts',
    env: 'MESHRELAY_SERVER_HOSTS',
    kind: 'list',
    default: '',
    description: 'extra DNS names/IPs for the relay server certificate (comma-separated)',
  },
  {
    key: 'advertiseAddress',
    flag: 'advertise-address',
    env: 'MESHRELAY_ADVERTISE_ADDRESS',
    kind: 'string',
    description: 'relay address printed to agents at registration (default localhost:<relay-port>)',
  },
  {
    key: 'clientCertLifetimeSeconds',
    flag: 'client-cert-lifetime',
    env: 'MESHRELAY_CLIENT_CERT_LIFETIME',
    kind: 'seconds',
    default: '86400',
    description: 'lifetime of agent client certificates: a duration (24h, 7d) or bare seconds',
  },
  {
    key: 'tokenTtlSeconds',
    flag: 'token-ttl',
    env: 'MESHRELAY_TOKEN_TTL',
    kind: 'seconds',
    default: '604800',
    description: 'lifetime of relay identity tokens: a duration (12h, 7d) or bare seconds',
  },
  {
    key: 'tokenOverlapSeconds',
    flag: 'token-overlap',
    env: 'MESHRELAY_TOKEN_OVERLAP',
    kind: 'seconds',
    default: '3600',
    description: 'how long a rotated-out token keeps working: a duration (30m, 1h) or bare seconds',
  },
  {
    key: 'maxSnapshotBytes',
    flag: 'max-snapshot-bytes',
    env: 'MESHRELAY_MAX_SNAPSHOT_BYTES',
    kind: 'size',
    default: String(16 * 1024 * 1024),
    description: 'largest accepted input snapshot (uncompressed): a size (16MiB, 64MiB) or bare bytes',
  },
  {
    key: 'maxResources',
    flag: 'max-resources',
    env: 'MESHRELAY_MAX_RESOURCES',
    kind: 'count',
    default: '50000',
    description: 'most resources per input snapshot',
  },
  {
    key: 'maxDeltaPatchOps',
    flag: 'max-delta-patch-ops',
    env: 'MESHRELAY_MAX_DELTA_PATCH_OPS',
    kind: 'count',
    default: '4096',
    description:
      "most RFC 6902 operations in one input delta's patches (an agent keeps a delta's patches under 64 KiB: ~2,200 operations at most)",
  },
  {
    key: 'maxResourcePatchOps',
    flag: 'max-resource-patch-ops',
    env: 'MESHRELAY_MAX_RESOURCE_PATCH_OPS',
    kind: 'count',
    default: '2048',
    description: 'most RFC 6902 operations patching one resource in one input delta',
  },
  {
    key: 'maxDeltaPatchWork',
    flag: 'max-delta-patch-work',
    env: 'MESHRELAY_MAX_DELTA_PATCH_WORK',
    kind: 'count',
    default: '4000000',
    description:
      "most items one input delta's patches may touch (each container walked or copied, each array item shifted, each value measured or compared)",
  },
  {
    key: 'snapshotTransferTimeoutMs',
    flag: 'snapshot-transfer-timeout',
    env: 'MESHRELAY_SNAPSHOT_TRANSFER_TIMEOUT',
    kind: 'duration',
    default: '60000',
    description: 'most time from a snapshot header to its last chunk: a duration (500ms, 30s) or bare ms',
  },
  {
    key: 'maxConnectionsPerPeer',
    flag: 'max-connections-per-peer',
    env: 'MESHRELAY_MAX_CONNECTIONS_PER_PEER',
    kind: 'count',
    default: '64',
    description: 'concurrent relay connections admitted from one IP address (raise behind NAT)',
  },
  {
    key: 'tlsHandshakeTimeoutMs',
    flag: 'tls-handshake-timeout',
    env: 'MESHRELAY_TLS_HANDSHAKE_TIMEOUT',
    kind: 'duration',
    default: '10000',
    description:
      'close relay connections whose TLS handshake has not finished after this long: a duration (500ms, 5s) or bare ms',
  },
  {
    key: 'registrationMaxFailures',
    flag: 'registration-max-failures',
    env: 'MESHRELAY_REGISTRATION_MAX_FAILURES',
    kind: 'count',
    default: '5',
    description: 'failed registrations per source address before rate limiting (a /24 or /64 network: 4 times as many)',
  },
  {
    key: 'registrationFailureWindowSeconds',
    flag: 'registration-failure-window',
    env: 'MESHRELAY_REGISTRATION_FAILURE_WINDOW',
    kind: 'seconds',
    default: '60',
    description: 'window for counting failed registrations: a duration (30s, 5m) or bare seconds',
  },
  {
    key: 'heartbeatIntervalMs',
    flag: 'heartbeat-interval',
    env: 'MESHRELAY_HEARTBEAT_INTERVAL',
    kind: 'duration',
    default: '5000',
    description: 'heartbeat period on relay streams: a duration (500ms, 5s) or bare ms',
  },
  {
    key: 'heartbeatTimeoutMs',
    flag: 'heartbeat-timeout',
    env: 'MESHRELAY_HEARTBEAT_TIMEOUT',
    kind: 'duration',
    default: '15000',
    description: 'drop a relay stream silent for this long: a duration (500ms, 15s) or bare ms',
  },
  {
    key: 'translationDebounceMs',
    flag: 'translation-debounce',
    env: 'MESHRELAY_TRANSLATION_DEBOUNCE',
    kind: 'duration',
    default: '0',
    description:
      'coalesce input changes for this long before translating; 0 translates on the next turn of the event loop (a burst coalesces behind a running translation all the same): a duration (10ms, 1s) or bare ms',
  },
  {
    key: 'interestScopedOutputs',
    flag: 'interest-scoped-outputs',
    env: 'MESHRELAY_INTEREST_SCOPED_OUTPUTS',
    kind: 'bool',
    default: 'false',
    description:
      "a cluster's output carries a VirtualDestination's ServiceEntries and DestinationRules only while the cluster has an interest in it: declared (the destination is defined there, has backends there or a route there names it) or a lease its agent renews by using one of its hosts",
  },
  {
    key: 'interestIdleMs',
    flag: 'interest-idle',
    env: 'MESHRELAY_INTEREST_IDLE',
    kind: 'duration',
    default: '600000',
    description:
      'a learned interest that no agent report renewed for this long expires (agents renew each host in use twice per --interest-idle at their default): a duration (30s, 10m) or bare ms',
  },
  {
    key: 'memoryReclaimIdleMs',
    flag: 'memory-reclaim-idle',
    env: 'MESHRELAY_MEMORY_RECLAIM_IDLE',
    kind: 'duration',
    default: '5000',
    description:
      'once the event loop has been idle this long and the heap grew by 256 MiB or more since the last reclaim (a cold start, a burst of snapshots), run one full collection so the garbage left behind goes back to the system (at 50 clusters × 1,000 services it paused the server 1-2 s); 0 never does: a duration (5s, 1m) or bare ms',
  },
  {
    key: 'vipCidr',
    flag: 'vip-cidr',
    env: 'MESHRELAY_VIP_CIDR',
    kind: 'string',
    default: '10.30.0.0/16',
    description: 'pool for VirtualDestination virtual IPs',
  },
  {
    key: 'vipCidrRoundRobin',
    flag: 'vip-cidr-round-robin',
    env: 'MESHRELAY_VIP_CIDR_ROUND_ROBIN',
    kind: 'string',
    default: '10.31.0.0/16',
    description:
      'pool for the round-robin address of each VirtualDestination annotated meshrelay.io/policy-addresses: "true" (host rr.<host>: locality load balancing off); must not overlap the other pools; off turns these addresses off',
  },
  {
    key: 'vipCidrClosest',
    flag: 'vip-cidr-closest',
    env: 'MESHRELAY_VIP_CIDR_CLOSEST',
    kind: 'string',
    default: '10.32.0.0/16',
    description:
      'pool for the closest address of each VirtualDestination annotated meshrelay.io/policy-addresses: "true" (host closest.<host>: locality failover with outlier detection); must not overlap the other pools; off turns these addresses off',
  },
  {
    key: 'instanceCidr',
    flag: 'instance-cidr',
    env: 'MESHRELAY_INSTANCE_CIDR',
    kind: 'string',
    default: '10.33.0.0/16',
    description:
      'pool for instance addresses (host <instance>.<host>, for Pods labelled meshrelay.io/instance behind a VirtualDestination annotated meshrelay.io/instance-addresses: "true"); must not overlap the other pools; off turns these addresses off',
  },
  {
    key: 'safeMode',
    flag: 'safe-mode',
    env: 'MESHRELAY_SAFE_MODE',
    kind: 'bool',
    default: 'false',
    description: 'glooMgmtServer.safeMode: hold translation until every warm cluster is present, no timeout',
  },
  {
    key: 'safeStartWindowSeconds',
    flag: 'safe-start-window',
    env: 'MESHRELAY_SAFE_START_WINDOW',
    kind: 'seconds',
    default: '180',
    description:
      'glooMgmtServer.safeStartWindow: without safe mode, hold at most this long after start: a duration (90s, 3m) or bare seconds (0 = no wait)',
  },
  {
    key: 'drainRetryAfterMs',
    flag: 'drain-retry-after',
    env: 'MESHRELAY_DRAIN_RETRY_AFTER',
    kind: 'duration',
    default: '1000',
    description: 'retry-after hint sent to agents when this replica drains: a duration (500ms, 5s) or bare ms',
  },
  {
    key: 'relayAdmitRate',
    flag: 'relay-admit-rate',
    env: 'MESHRELAY_RELAY_ADMIT_RATE',
    kind: 'count',
    default: '50',
    description:
      "new agent relay sessions admitted per second (burst: one second's worth); the rest get a go-away with a spread retry-after hint, so a reconnect storm after a restart arrives as a paced wave",
  },
  {
    key: 'maxDeleteShare',
    flag: 'max-delete-share',
    env: 'MESHRELAY_MAX_DELETE_SHARE',
    kind: 'share',
    default: '0.5',
    description: 'blast-radius guard: hold an output deleting more than this share (0-1) of what an agent holds',
  },
  {
    key: 'blastRadiusMinResources',
    flag: 'blast-radius-min-resources',
    env: 'MESHRELAY_BLAST_RADIUS_MIN_RESOURCES',
    kind: 'count',
    default: '5',
    description: 'blast-radius guard: outputs replacing fewer resources are not held for their share',
  },
  {
    key: 'adminToken',
    flag: 'admin-token',
    env: 'MESHRELAY_ADMIN_TOKEN',
    kind: 'string',
    description:
      'admin credential every /api/v1 call needs as "Authorization: Bearer <token>" (at least 16 characters); unset = the one in the durable state, created on first start',
  },
  {
    key: 'adminTokenFile',
    flag: 'admin-token-file',
    env: 'MESHRELAY_ADMIN_TOKEN_FILE',
    kind: 'string',
    description: 'read the admin credential from this file (e.g. a mounted Secret) instead of --admin-token',
  },
  {
    key: 'registry',
    flag: 'registry',
    env: 'MESHRELAY_REGISTRY',
    kind: 'string',
    default: 'file',
    description:
      'durable state backend: file (the state directory) or kubernetes (KubernetesCluster CRs, Secrets, a ConfigMap)',
  },
  {
    key: 'namespace',
    flag: 'namespace',
    env: 'MESHRELAY_NAMESPACE',
    kind: 'string',
    default: 'gloo-mesh',
    description: 'management namespace of the kubernetes registry',
  },
  {
    key: 'kubeconfig',
    flag: 'kubeconfig',
    env: 'KUBECONFIG',
    kind: 'string',
    description: 'kubeconfig file for the kubernetes registry (one path); unset = in-cluster service account',
  },
  {
    key: 'kubeContext',
    flag: 'kube-context',
    env: 'MESHRELAY_KUBE_CONTEXT',
    kind: 'string',
    description: 'context of --kubeconfig (default: its current-context)',
  },
  {
    key: 'workspacesFile',
    flag: 'workspaces-file',
    env: 'MESHRELAY_WORKSPACES_FILE',
    kind: 'string',
    description:
      'YAML file of Gloo Workspaces (admin.gloo.solo.io/v2), read at start; unset = Workspace CRs in --namespace with --registry kubernetes, else one implicit workspace owning every namespace',
  },
  {
    key: 'rootTrustPolicyFile',
    flag: 'root-trust-policy',
    env: 'MESHRELAY_ROOT_TRUST_POLICY',
    kind: 'string',
    description:
      'YAML file of the RootTrustPolicy (admin.gloo.solo.io/v2) in force, read at start; unset = the RootTrustPolicy CR in --namespace with --registry kubernetes, else none (mesh trust off)',
  },
  {
    key: 'trustTickMs',
    flag: 'trust-tick',
    env: 'MESHRELAY_TRUST_TICK',
    kind: 'duration',
    default: '5s',
    description: 'how often the mesh root rotation rules are evaluated: a duration (500ms, 5s) or bare ms',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'MESHRELAY_LOG_LEVEL',
    kind: 'string',
    default: 'info',
    description: 'trace|debug|info|warn|error',
  },
];

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function convert(spec: Spec, raw: string | undefined): unknown {
  const bad = (why: string) =>
    new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--${spec.flag} (${spec.env}): "${raw}" ${why}`);
  if (raw === undefined) return spec.kind === 'list' ? [] : undefined;
  switch (spec.kind) {
    case 'string':
      if (raw.trim() === '') throw bad('must not be empty');
      return raw;
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    case 'bool':
      if (!['true', 'false', '1', '0'].includes(raw)) throw bad('is not true or false');
      return raw === 'true' || raw === '1';
    case 'share': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw bad('is not a share between 0 and 1');
      return n;
    }
    case 'duration':
    case 'seconds':
    case 'size': {
      const parsed =
        spec.kind === 'size' ? parseByteSize(raw, 1) : parseDuration(raw, 0, spec.kind === 'seconds' ? 's' : 'ms');
      if ('error' in parsed)
        throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--${spec.flag} (${spec.env}): ${parsed.error}`);
      if (spec.kind !== 'seconds') return parsed.value;
      if (parsed.value % 1000 !== 0)
        throw bad('is not a whole number of seconds (e.g. 90s, 3m, 1h, 7d, or bare seconds)');
      return parsed.value / 1000;
    }
    case 'port':
    case 'count': {
      if (!/^\d+$/.test(raw)) throw bad('is not a whole number');
      const n = Number(raw);
      if (spec.kind === 'port' && n > 65535) throw bad('is not a port (0-65535)');
      return n;
    }
  }
}

/** Builds the commander program (used for --help too). */
export function serverCommand(): Command {
  const cmd = new Command('meshrelay-server')
    .description('Meshrelay management server: relay gRPC, translation, HTTP API and UI, metrics')
    .allowExcessArguments(false)
    .exitOverride();
  for (const spec of SPECS) {
    const placeholder = spec.kind === 'bool' ? ' [bool]' : ' <value>';
    const opt = new Option(`--${spec.flag}${placeholder}`, spec.description).env(spec.env);
    if (spec.default !== undefined) opt.default(spec.default);
    cmd.addOption(opt);
  }
  return cmd;
}

/** Parses and validates; throws MESHRELAY_ERR_INVALID_CONFIG naming the bad option. */
/** The value of a pool flag that turns its kind of address off. */
const POOL_OFF = 'off';

/** The address pools the VIP allocation store allocates from ('' for a kind turned off). */
export function vipPoolsOf(config: ServerConfig): VipPools {
  const pool = (cidr: string): string => (cidr === POOL_OFF ? '' : cidr);
  return {
    virtualDestination: config.vipCidr,
    roundRobin: pool(config.vipCidrRoundRobin),
    closest: pool(config.vipCidrClosest),
    instance: pool(config.instanceCidr),
  };
}

export function parseServerConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerConfig {
  // commander reads option variables from process.env: expose exactly `env`'s values while parsing.
  const saved = new Map(SPECS.map((spec) => [spec.env, process.env[spec.env]]));
  let values: Record<string, string | boolean | undefined>;
  try {
    for (const spec of SPECS) {
      if (env[spec.env] === undefined) delete process.env[spec.env];
      else process.env[spec.env] = env[spec.env];
    }
    const cmd = serverCommand();
    cmd.parse([...argv], { from: 'user' });
    values = cmd.opts();
  } finally {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
  const out: Record<string, unknown> = {};
  for (const spec of SPECS) {
    const camel = spec.flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const raw = values[camel];
    out[spec.key] = convert(spec, raw === true ? 'true' : raw === false ? 'false' : raw);
  }
  const config = out as unknown as ServerConfig;
  if (!LOG_LEVELS.includes(config.logLevel)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--log-level: "${config.logLevel}" is not one of ${LOG_LEVELS.join(', ')}`,
    );
  }
  if (config.relayAdmitRate < 1) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      '--relay-admit-rate (MESHRELAY_RELAY_ADMIT_RATE): must be at least 1 session per second',
    );
  }
  if (config.registry !== 'file' && config.registry !== 'kubernetes') {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--registry (MESHRELAY_REGISTRY): "${String(config.registry)}" is not file or kubernetes`,
    );
  }
  if (!DNS_LABEL.test(config.namespace)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--namespace (MESHRELAY_NAMESPACE): "${config.namespace}" is not a DNS-1123 label`,
    );
  }
  for (const [flag, value] of [
    ['max-delta-patch-ops', config.maxDeltaPatchOps],
    ['max-resource-patch-ops', config.maxResourcePatchOps],
    ['max-delta-patch-work', config.maxDeltaPatchWork],
  ] as const) {
    if (value < 1 || !Number.isSafeInteger(value))
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--${flag}: must be a whole number of at least 1`);
  }
  if (config.interestIdleMs < 1000) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      '--interest-idle (MESHRELAY_INTEREST_IDLE): must be at least 1s (a lease shorter than a report round trip would flap)',
    );
  }
  if (config.trustTickMs < 100) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      '--trust-tick (MESHRELAY_TRUST_TICK): must be at least 100ms',
    );
  }
  if (config.heartbeatTimeoutMs <= config.heartbeatIntervalMs) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      '--heartbeat-timeout must be larger than --heartbeat-interval',
    );
  }
  // `off` turns that kind of address off; the default VIPs' pool is always needed.
  const optional = {
    '--vip-cidr-round-robin (MESHRELAY_VIP_CIDR_ROUND_ROBIN)': config.vipCidrRoundRobin,
    '--vip-cidr-closest (MESHRELAY_VIP_CIDR_CLOSEST)': config.vipCidrClosest,
    '--instance-cidr (MESHRELAY_INSTANCE_CIDR)': config.instanceCidr,
  };
  checkVipPools({
    '--vip-cidr (MESHRELAY_VIP_CIDR)': config.vipCidr,
    ...Object.fromEntries(Object.entries(optional).filter(([, cidr]) => cidr !== POOL_OFF)),
  });
  if (config.adminToken !== undefined && config.adminTokenFile !== undefined) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      '--admin-token (MESHRELAY_ADMIN_TOKEN) and --admin-token-file (MESHRELAY_ADMIN_TOKEN_FILE): give one, not both',
    );
  }
  if (config.adminToken !== undefined) assertAdminToken(config.adminToken, '--admin-token (MESHRELAY_ADMIN_TOKEN)');
  assertRedisConfig(config);
  return Object.freeze(config);
}
