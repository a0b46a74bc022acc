import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import {
  DNS_LABEL,
  MeshrelayError,
  isValidClusterName,
  parseByteSize,
  parseDuration,
  type Parsed,
} from '@meshrelay/api';

export { parseByteSize, parseDuration, type Parsed };
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES } from './discovery/manifest-reader.ts';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where input snapshots come from (`--discovery-provider`) and where outputs go (`--apply`). */
export const BACKENDS = ['file', 'kubernetes'] as const;
export const LEADER_ELECTION_MODES = ['none', 'file', 'kubernetes'] as const;
export type LeaderElectionMode = (typeof LEADER_ELECTION_MODES)[number];
export type Backend = (typeof BACKENDS)[number];

/**
 * The one typed configuration of a relay agent process (flags and MESHRELAY_AGENT_* variables map onto it one to one).
 */
export interface AgentConfig {
  readonly cluster: string;
  /** Management server relay addresses (host:port), tried in order and rotated on failure or go-away. */
  readonly serverAddresses: readonly string[];
  readonly token?: string;
  readonly tokenFile?: string;
  readonly rootCaFile?: string;
  /** Discovery source: a manifests directory (`file`, the default) or the cluster's API server (`kubernetes`). */
  readonly discoveryProvider?: Backend;
  /**
   * Output sink: files in the output dir (`file`) or server-side apply into the cluster (`kubernetes`); default: as
   * discoveryProvider.
   */
  readonly apply?: Backend;
  /** Required with the file provider. */
  readonly manifestsDir?: string;
  /** File provider: where resource statuses are written; default `<manifestsDir>/.meshrelay-status`. */
  readonly statusDir?: string;
  /** Required with the file applier. */
  readonly outputDir?: string;
  /** Kubeconfig file for the kubernetes provider/applier; in-cluster configuration when absent. */
  readonly kubeconfig?: string;
  readonly kubeContext?: string;
  /** Namespaces the kubernetes provider watches; empty or absent = all. */
  readonly watchNamespaces?: readonly string[];
  /**
   * Namespace of Istio's mesh config ConfigMap `istio` the kubernetes provider reads the trust domain from (default
   * istio-system).
   */
  readonly istioNamespace?: string;
  readonly stateDir: string;
  /**
   * When set, the client key and certificate live in this Secret (shared by replicas and restarts) instead of the state
   * dir.
   */
  readonly credentialsSecret?: string;
  /** Namespace of credentialsSecret. */
  readonly credentialsNamespace: string;
  readonly debounceMs: number;
  readonly rescanIntervalMs: number;
  /** File provider: largest manifest file read (default 8 MiB). */
  readonly maxManifestFileBytes?: number;
  /** File provider: largest total size of the manifests dir read (default 64 MiB). */
  readonly maxManifestsBytes?: number;
  /** File provider: follow symlinks that lead outside the manifests dir (default false). */
  readonly followExternalSymlinks?: boolean;
  readonly healthPort: number;
  /**
   * Address the health/metrics server listens on (default 0.0.0.0: kubelet probes and Prometheus come from outside the
   * pod).
   */
  readonly healthHost?: string;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly logLevel: LogLevel;
  readonly maxSnapshotBytes: number;
  /** Port of the Envoy access-log sink (gRPC AccessLogService) every replica serves. */
  readonly accessLogPort: number;
  /**
   * Address the access-log sink listens on (default 0.0.0.0: the cluster's sidecars send to it over the pod network).
   */
  readonly accessLogHost?: string;
  /** Port of the aggregated xDS server for proxyless gRPC clients (0 = off unless --xds-socket is set). */
  readonly xdsPort?: number;
  /** Default 127.0.0.1: the clients run on this node; set the pod IP to serve the cluster. */
  readonly xdsHost?: string;
  /** How often the hosts in use are renewed with the management plane (DESIGN §17). */
  readonly interestRenewIntervalMs?: number;
  /** A Unix socket the xDS server listens on as well (or alone). */
  readonly xdsSocket?: string;
  /** How replicas of one cluster pick the one that relays: not at all (`none`), a lease file, or a Kubernetes Lease. */
  readonly leaderElection: LeaderElectionMode;
  /** Required with `--leader-election file`; every replica of the cluster names the same file. */
  readonly leaseFile?: string;
  readonly leaseName: string;
  readonly leaseNamespace: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** This replica's identity in the lease (the pod name in Kubernetes). */
  readonly replicaId: string;
  /** Mesh trust: `cacerts` as a directory; default `<stateDir>/cacerts`, or the Secret with `--apply kubernetes`. */
  readonly cacertsDir?: string;
  /** Mesh trust: where workload certificates are written; default `<stateDir>/workload-certs`. */
  readonly workloadCertDir?: string;
  /** Mesh trust: base lifetime of workload certificates (jittered), default 24 h. */
  readonly workloadCertTtlMs?: number;
  /** Mesh trust: how often the management plane is asked (default 30 s; 0 = mesh trust off). */
  readonly trustIntervalMs?: number;
}

const ENV_PREFIX = 'MESHRELAY_AGENT_';

interface OptionSpec {
  readonly flags: string;
  readonly description: string;
  readonly defaultValue?: string;
  /** The environment variable, when it is not MESHRELAY_AGENT_<NAME>. */
  readonly env?: string;
}

// Defaults are strings so `--help` shows them exactly as a user would type them.
const OPTIONS: readonly OptionSpec[] = [
  { flags: '--cluster <name>', description: 'name of this workload cluster (required; as registered with meshctl)' },
  {
    flags: '--server-address <list>',
    description: 'comma-separated relay addresses host:port',
    defaultValue: 'localhost:9900',
  },
  { flags: '--token <token>', description: 'relay identity token (used only to register)' },
  { flags: '--token-file <path>', description: 'file holding the relay identity token (read at each registration)' },
  {
    flags: '--root-ca-file <path>',
    description: 'PEM file of the relay root CA (printed by `meshctl cluster register`)',
  },
  {
    flags: '--discovery-provider <name>',
    description: `where input snapshots come from (${BACKENDS.join('|')})`,
    defaultValue: 'file',
  },
  {
    flags: '--apply <name>',
    description: `where output snapshots go (${BACKENDS.join('|')}; default: as --discovery-provider)`,
  },
  {
    flags: '--manifests-dir <dir>',
    description: 'directory of YAML/JSON manifests discovered by the file provider (required with it)',
  },
  {
    flags: '--status-dir <dir>',
    description:
      "directory the file provider writes each Gloo resource's status to (default: .meshrelay-status inside --manifests-dir)",
  },
  {
    flags: '--output-dir <dir>',
    description: 'directory the output snapshots are written to (required with --apply file)',
  },
  {
    flags: '--kubeconfig <path>',
    description: 'kubeconfig of the cluster (kubernetes provider/applier; default: in-cluster service account)',
    env: 'KUBECONFIG',
  },
  { flags: '--kube-context <name>', description: 'context of the kubeconfig to use (default: its current-context)' },
  {
    flags: '--watch-namespaces <list>',
    description: 'comma-separated namespaces the kubernetes provider watches (default: all)',
  },
  {
    flags: '--istio-namespace <namespace>',
    description:
      "namespace of Istio's mesh config ConfigMap `istio` (its trustDomain) and of the `cacerts` Secret with --apply kubernetes",
    defaultValue: 'istio-system',
  },
  {
    flags: '--cacerts-dir <dir>',
    description:
      "directory of the cluster's intermediate CA for istiod (ca-cert.pem, ca-key.pem, cert-chain.pem, root-cert.pem; default: <state-dir>/cacerts, or the Secret cacerts with --apply kubernetes)",
  },
  {
    flags: '--workload-cert-dir <dir>',
    description:
      'directory of workload certificates for gRPC file_watcher, <namespace>/<serviceAccount>/ (default: <state-dir>/workload-certs)',
  },
  {
    flags: '--workload-cert-ttl <duration>',
    description: 'base lifetime of workload certificates, jittered by up to 10 %',
    defaultValue: '24h',
  },
  {
    flags: '--trust-interval <duration>',
    description: 'how often the mesh trust (bundle, intermediate CA) is asked of the management server (0 = off)',
    defaultValue: '30s',
  },
  {
    flags: '--state-dir <dir>',
    description: 'directory for the client key, certificate and last applied output (required)',
  },
  {
    flags: '--credentials-secret <name>',
    description:
      'Secret holding the client key and certificate instead of the state dir (kubeconfig as --kubeconfig; default: none)',
  },
  {
    flags: '--credentials-namespace <namespace>',
    description: 'namespace of --credentials-secret',
    defaultValue: 'gloo-mesh',
  },
  {
    flags: '--debounce-ms <duration>',
    description: 'quiet time before changes become a new snapshot: a duration (250ms, 1s) or bare ms, at most 1m',
    defaultValue: '100',
  },
  {
    flags: '--rescan-interval <duration>',
    description:
      'safety rescan of the manifests dir for missed watch events (stats every file, reads only changed ones)',
    defaultValue: '60s',
  },
  {
    flags: '--max-manifest-file-bytes <size>',
    description:
      'largest manifest file read; larger ones are reported and not read (8MiB holds a 12k-resource cluster in one file)',
    defaultValue: '8MiB',
  },
  {
    flags: '--max-manifests-bytes <size>',
    description: 'largest total of the manifests dir; files past it (in path order) are reported and not read',
    defaultValue: '64MiB',
  },
  {
    flags: '--follow-external-symlinks [bool]',
    description:
      'follow symlinks in the manifests dir that lead outside it (true|false; default false: reported, not followed)',
  },
  {
    flags: '--health-port <port>',
    description:
      'port of /healthz, /readyz, /status (relay state, input problems by file; never file contents), /metrics (0 = random)',
    defaultValue: '9977',
  },
  {
    flags: '--health-host <host>',
    description: 'address the health port listens on (kubelet probes and Prometheus need the pod IP)',
    defaultValue: '0.0.0.0',
  },
  {
    flags: '--heartbeat-interval <duration>',
    description: 'heartbeat period on both relay streams',
    defaultValue: '5s',
  },
  {
    flags: '--heartbeat-timeout <duration>',
    description: 'reconnect when nothing arrived from the server for this long',
    defaultValue: '15s',
  },
  { flags: '--log-level <level>', description: `log level (${LOG_LEVELS.join('|')})`, defaultValue: 'info' },
  {
    flags: '--max-snapshot-bytes <size>',
    description:
      'largest snapshot sent or accepted: a size (16MiB, 64MiB) or bare bytes; 64MiB holds a tier L output (~47 MiB)',
    defaultValue: '64MiB',
  },
  {
    flags: '--access-log-port <port>',
    description:
      'port of the Envoy gRPC access-log sink served by every replica: plaintext, takes access logs and only counts them into /metrics (0 = random)',
    defaultValue: '9978',
  },
  {
    flags: '--access-log-host <host>',
    description:
      "address the access-log sink listens on (the cluster's sidecars reach it over the pod network; 127.0.0.1 when none send to it)",
    defaultValue: '0.0.0.0',
  },
  {
    flags: '--xds-port <port>',
    description:
      'port of the aggregated xDS server (plaintext) proxyless gRPC clients read routes and endpoints from (0 = off)',
    defaultValue: '0',
  },
  { flags: '--xds-host <host>', description: 'address the xDS server listens on', defaultValue: '127.0.0.1' },
  { flags: '--xds-socket <path>', description: 'Unix socket the xDS server listens on, with or without --xds-port' },
  {
    flags: '--interest-renew-interval <duration>',
    description:
      "how often the hosts this cluster's proxies subscribe to and its access logs name are renewed with the management plane (keep it at most half the server's --interest-idle); a new host is told at once",
    defaultValue: '5m',
  },
  {
    flags: '--leader-election <mode>',
    description: `how replicas elect the one that relays (${LEADER_ELECTION_MODES.join('|')})`,
    defaultValue: 'none',
  },
  {
    flags: '--lease-file <path>',
    description: 'lease file shared by the replicas (required with --leader-election file)',
  },
  {
    flags: '--lease-name <name>',
    description: 'name of the coordination.k8s.io Lease (default: meshrelay-agent-<cluster>)',
  },
  { flags: '--lease-namespace <namespace>', description: 'namespace of the Lease', defaultValue: 'gloo-mesh' },
  {
    flags: '--lease-duration <duration>',
    description: 'how long a lease stays valid after its last renewal',
    defaultValue: '15s',
  },
  {
    flags: '--renew-deadline <duration>',
    description: 'a leader that could not renew for this long steps down (shorter than --lease-duration)',
    defaultValue: '10s',
  },
  {
    flags: '--retry-period <duration>',
    description: 'time between attempts to acquire or renew the lease',
    defaultValue: '2s',
  },
  {
    flags: '--replica-id <id>',
    description: 'identity of this replica in the lease (default: $POD_NAME, else <hostname>-<pid>)',
  },
];

function envName(flags: string): string {
  const long = /--([a-z-]+)/.exec(flags)?.[1] ?? '';
  return (
    OPTIONS.find((spec) => spec.flags.startsWith(`--${long} `))?.env ??
    ENV_PREFIX + long.toUpperCase().replaceAll('-', '_')
  );
}

/** The commander program of `meshrelay-agent`; every option also reads MESHRELAY_AGENT_<NAME>. */
export function buildAgentCommand(): Command {
  const program = new Command('meshrelay-agent')
    .description('Meshrelay relay agent: discovers manifests, pushes input snapshots, applies output snapshots')
    .exitOverride()
    .configureOutput({ writeErr: () => {} })
    .allowExcessArguments(false);
  for (const spec of OPTIONS) {
    const option = new Option(spec.flags, spec.description).env(envName(spec.flags));
    if (spec.defaultValue !== undefined) option.default(spec.defaultValue);
    program.addOption(option);
  }
  return program;
}

/**
 * Parses argv (without the node and script entries) and the environment into a
 * validated AgentConfig. Throws a commander error for --help/--version and
 * unknown flags, and MESHRELAY_ERR_INVALID_CONFIG naming each bad field.
 */
export function parseAgentConfig(argv: readonly string[]): AgentConfig {
  const program = buildAgentCommand();
  program.parse([...argv], { from: 'user' });
  const values = program.opts<Record<string, string | boolean | undefined>>();
  const fieldName = (key: string, flag: string): string =>
    program.getOptionValueSource(key) === 'env' ? `--${flag} (from ${envName(`--${flag}`)})` : `--${flag}`;
  return validateAgentOptions(values, fieldName);
}

/** Raw option values by commander's camelCase key: text, or true for a switch such as --follow-external-symlinks. */
export type OptionValues = Readonly<Record<string, string | boolean | undefined>>;

type FieldNamer = (key: string, flag: string) => string;

/**
 * Validates raw option strings (keys in commander's camelCase) into an AgentConfig.
 * Collects every problem into one MESHRELAY_ERR_INVALID_CONFIG whose message
 * names each bad field, e.g. `--server-address: "x" is not host:port`.
 */
export function validateAgentOptions(
  values: OptionValues,
  fieldName: FieldNamer = (_k, flag) => `--${flag}`,
): AgentConfig {
  const problems: string[] = [];
  const field = <T>(key: string, flag: string, parse: (raw: string) => Parsed<T>, fallback: T): T => {
    const raw = values[key];
    if (raw === undefined || typeof raw === 'boolean') return fallback;
    const parsed = parse(raw);
    if ('error' in parsed) {
      problems.push(`${fieldName(key, flag)}: ${parsed.error}`);
      return fallback;
    }
    return parsed.value;
  };
  const required = (key: string, flag: string): string => {
    const raw = text(values[key])?.trim() ?? '';
    if (raw === '') problems.push(`${fieldName(key, flag)} is required`);
    return raw;
  };

  const cluster = required('cluster', 'cluster');
  if (cluster !== '' && !isValidClusterName(cluster))
    problems.push(`${fieldName('cluster', 'cluster')}: "${cluster}" is not a DNS-1123 label`);
  const token = optionalText(values['token']);
  const tokenFile = optionalText(values['tokenFile']);
  const rootCaFile = optionalText(values['rootCaFile']);
  if (token !== undefined && tokenFile !== undefined) problems.push('--token and --token-file are mutually exclusive');
  const config: AgentConfig = {
    cluster,
    serverAddresses: field('serverAddress', 'server-address', parseAddressList, ['localhost:9900']),
    ...(token !== undefined ? { token } : {}),
    ...(tokenFile !== undefined ? { tokenFile } : {}),
    ...(rootCaFile !== undefined ? { rootCaFile } : {}),
    ...backendOptions(values, fieldName, problems),
    stateDir: required('stateDir', 'state-dir'),
    ...credentialsOptions(values, fieldName, problems),
    debounceMs: field('debounceMs', 'debounce-ms', (raw) => parseDurationAtMost(raw, 60_000), 100),
    rescanIntervalMs: field('rescanInterval', 'rescan-interval', (raw) => parseDuration(raw, 10), 60_000),
    maxManifestFileBytes: field(
      'maxManifestFileBytes',
      'max-manifest-file-bytes',
      parseByteSize,
      DEFAULT_MAX_FILE_BYTES,
    ),
    maxManifestsBytes: field('maxManifestsBytes', 'max-manifests-bytes', parseByteSize, DEFAULT_MAX_TOTAL_BYTES),
    followExternalSymlinks:
      values['followExternalSymlinks'] === true ||
      field('followExternalSymlinks', 'follow-external-symlinks', parseBoolean, false),
    healthPort: field('healthPort', 'health-port', (raw) => parseWholeNumber(raw, 0, 65_535), 9977),
    healthHost: field('healthHost', 'health-host', parseListenHost, '0.0.0.0'),
    heartbeatIntervalMs: field('heartbeatInterval', 'heartbeat-interval', (raw) => parseDuration(raw, 10), 5_000),
    heartbeatTimeoutMs: field('heartbeatTimeout', 'heartbeat-timeout', (raw) => parseDuration(raw, 10), 15_000),
    logLevel: field('logLevel', 'log-level', parseLogLevel, 'info'),
    maxSnapshotBytes: field('maxSnapshotBytes', 'max-snapshot-bytes', parseByteSize, 64 * 1024 * 1024),
    accessLogPort: field('accessLogPort', 'access-log-port', (raw) => parseWholeNumber(raw, 0, 65_535), 9978),
    accessLogHost: field('accessLogHost', 'access-log-host', parseListenHost, '0.0.0.0'),
    xdsPort: field('xdsPort', 'xds-port', (raw) => parseWholeNumber(raw, 0, 65_535), 0),
    xdsHost: field('xdsHost', 'xds-host', parseListenHost, '127.0.0.1'),
    interestRenewIntervalMs: field(
      'interestRenewInterval',
      'interest-renew-interval',
      (raw) => parseDuration(raw, 100),
      300_000,
    ),
    ...(optionalText(values['xdsSocket']) !== undefined
      ? { xdsSocket: optionalText(values['xdsSocket']) as string }
      : {}),
    ...leaderElectionOptions(values, fieldName, problems, cluster),
    ...(optionalText(values['cacertsDir']) !== undefined
      ? { cacertsDir: optionalText(values['cacertsDir']) as string }
      : {}),
    ...(optionalText(values['workloadCertDir']) !== undefined
      ? { workloadCertDir: optionalText(values['workloadCertDir']) as string }
      : {}),
    workloadCertTtlMs: field('workloadCertTtl', 'workload-cert-ttl', (raw) => parseDuration(raw, 1000), 86_400_000),
    trustIntervalMs: field('trustInterval', 'trust-interval', parseTrustInterval, 30_000),
  };
  if (config.accessLogPort !== 0 && config.accessLogPort === config.healthPort) {
    problems.push(`${fieldName('accessLogPort', 'access-log-port')}: ${config.accessLogPort} is already --health-port`);
  }
  if (
    config.xdsPort !== undefined &&
    config.xdsPort !== 0 &&
    (config.xdsPort === config.healthPort || config.xdsPort === config.accessLogPort)
  ) {
    problems.push(
      `${fieldName('xdsPort', 'xds-port')}: ${config.xdsPort} is already --health-port or --access-log-port`,
    );
  }
  if (config.heartbeatTimeoutMs <= config.heartbeatIntervalMs) {
    problems.push(
      `${fieldName('heartbeatTimeout', 'heartbeat-timeout')}: must be longer than --heartbeat-interval (${config.heartbeatIntervalMs} ms)`,
    );
  }
  if (problems.length > 0) throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', problems.join('; '));
  return Object.freeze(config);
}

/**
 * --discovery-provider, --apply and what each needs: the file backends their dirs, the kubernetes ones their
 * kubeconfig.
 */
function backendOptions(values: OptionValues, fieldName: FieldNamer, problems: string[]): Partial<AgentConfig> {
  const backend = (key: string, flag: string, fallback: Backend): Backend => {
    const raw = optionalText(values[key]);
    if (raw === undefined) return fallback;
    const found = BACKENDS.find((b) => b === raw);
    if (found === undefined) problems.push(`${fieldName(key, flag)}: "${raw}" is not one of ${BACKENDS.join(', ')}`);
    return found ?? fallback;
  };
  const discoveryProvider = backend('discoveryProvider', 'discovery-provider', 'file');
  const apply = backend('apply', 'apply', discoveryProvider);
  const manifestsDir = optionalText(values['manifestsDir']);
  const outputDir = optionalText(values['outputDir']);
  const statusDir = optionalText(values['statusDir']);
  if (discoveryProvider === 'file' && manifestsDir === undefined)
    problems.push(`${fieldName('manifestsDir', 'manifests-dir')} is required with --discovery-provider file`);
  if (apply === 'file' && outputDir === undefined)
    problems.push(`${fieldName('outputDir', 'output-dir')} is required with --apply file`);
  const kubeconfig = optionalText(values['kubeconfig']);
  const kubeContext = optionalText(values['kubeContext']);
  const watchNamespaces = [
    ...new Set(
      (text(values['watchNamespaces']) ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
  for (const namespace of watchNamespaces) {
    if (!DNS_LABEL.test(namespace))
      problems.push(
        `${fieldName('watchNamespaces', 'watch-namespaces')}: "${namespace}" is not a namespace name (DNS-1123 label)`,
      );
  }
  const istioNamespace = optionalText(values['istioNamespace']) ?? 'istio-system';
  if (!DNS_LABEL.test(istioNamespace))
    problems.push(
      `${fieldName('istioNamespace', 'istio-namespace')}: "${istioNamespace}" is not a namespace name (DNS-1123 label)`,
    );
  return {
    discoveryProvider,
    apply,
    ...(manifestsDir !== undefined ? { manifestsDir } : {}),
    ...(statusDir !== undefined ? { statusDir } : {}),
    ...(outputDir !== undefined ? { outputDir } : {}),
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(kubeContext !== undefined ? { kubeContext } : {}),
    watchNamespaces,
    istioNamespace,
  };
}

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** --credentials-secret (a DNS-1123 subdomain) and --credentials-namespace (a DNS-1123 label). */
function credentialsOptions(
  values: OptionValues,
  fieldName: FieldNamer,
  problems: string[],
): Pick<AgentConfig, 'credentialsSecret' | 'credentialsNamespace'> {
  const credentialsSecret = optionalText(values['credentialsSecret']);
  if (credentialsSecret !== undefined && !OBJECT_NAME.test(credentialsSecret)) {
    problems.push(
      `${fieldName('credentialsSecret', 'credentials-secret')}: "${credentialsSecret}" is not an object name (DNS-1123 subdomain)`,
    );
  }
  const credentialsNamespace = optionalText(values['credentialsNamespace']) ?? 'gloo-mesh';
  if (!DNS_LABEL.test(credentialsNamespace))
    problems.push(
      `${fieldName('credentialsNamespace', 'credentials-namespace')}: "${credentialsNamespace}" is not a namespace name (DNS-1123 label)`,
    );
  return { ...(credentialsSecret !== undefined ? { credentialsSecret } : {}), credentialsNamespace };
}

type LeaderElectionOptions = Pick<
  AgentConfig,
  | 'leaderElection'
  | 'leaseFile'
  | 'leaseName'
  | 'leaseNamespace'
  | 'leaseDurationMs'
  | 'renewDeadlineMs'
  | 'retryPeriodMs'
  | 'replicaId'
>;

/** --leader-election and the lease it uses; timing must satisfy retry period < renew deadline < lease duration. */
function leaderElectionOptions(
  values: OptionValues,
  fieldName: FieldNamer,
  problems: string[],
  cluster: string,
): LeaderElectionOptions {
  const duration = (key: string, flag: string, fallback: number): number => {
    const parsed = parseDuration(text(values[key]) ?? String(fallback), 100);
    if ('value' in parsed) return parsed.value;
    problems.push(`${fieldName(key, flag)}: ${parsed.error}`);
    return fallback;
  };
  const rawMode = optionalText(values['leaderElection']) ?? 'none';
  const leaderElection = LEADER_ELECTION_MODES.find((m) => m === rawMode);
  if (leaderElection === undefined)
    problems.push(
      `${fieldName('leaderElection', 'leader-election')}: "${rawMode}" is not one of ${LEADER_ELECTION_MODES.join(', ')}`,
    );
  const leaseFile = optionalText(values['leaseFile']);
  if (leaderElection === 'file' && leaseFile === undefined)
    problems.push(`${fieldName('leaseFile', 'lease-file')} is required with --leader-election file`);
  const leaseName = optionalText(values['leaseName']) ?? `meshrelay-agent-${cluster}`;
  if (!OBJECT_NAME.test(leaseName))
    problems.push(`${fieldName('leaseName', 'lease-name')}: "${leaseName}" is not an object name (DNS-1123 subdomain)`);
  const leaseNamespace = optionalText(values['leaseNamespace']) ?? 'gloo-mesh';
  if (!DNS_LABEL.test(leaseNamespace))
    problems.push(
      `${fieldName('leaseNamespace', 'lease-namespace')}: "${leaseNamespace}" is not a namespace name (DNS-1123 label)`,
    );
  const leaseDurationMs = duration('leaseDuration', 'lease-duration', 15_000);
  const renewDeadlineMs = duration('renewDeadline', 'renew-deadline', 10_000);
  const retryPeriodMs = duration('retryPeriod', 'retry-period', 2_000);
  if (renewDeadlineMs >= leaseDurationMs)
    problems.push(
      `${fieldName('renewDeadline', 'renew-deadline')}: must be shorter than --lease-duration (${leaseDurationMs} ms)`,
    );
  if (retryPeriodMs >= renewDeadlineMs)
    problems.push(
      `${fieldName('retryPeriod', 'retry-period')}: must be shorter than --renew-deadline (${renewDeadlineMs} ms)`,
    );
  const replicaId =
    optionalText(values['replicaId']) ?? optionalText(process.env['POD_NAME']) ?? `${hostname()}-${process.pid}`;
  return {
    leaderElection: leaderElection ?? 'none',
    ...(leaseFile !== undefined ? { leaseFile } : {}),
    leaseName,
    leaseNamespace,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    replicaId,
  };
}

function text(raw: string | boolean | undefined): string | undefined {
  return typeof raw === 'string' ? raw : undefined;
}

function optionalText(raw: string | boolean | undefined): string | undefined {
  const trimmed = text(raw)?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

const HOST =
  /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)$/;

/** "a:1,b:2" → ["a:1","b:2"]; an error when the list is empty or any entry is not host:port. */
export function parseAddressList(raw: string): Parsed<string[]> {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length === 0) return { error: 'no address given' };
  for (const entry of entries) {
    const colon = entry.lastIndexOf(':');
    const portText = entry.slice(colon + 1);
    const port = Number(portText);
    if (colon <= 0 || !HOST.test(entry.slice(0, colon)) || !/^\d+$/.test(portText) || port < 1 || port > 65_535) {
      return { error: `"${entry}" is not host:port` };
    }
  }
  return { value: entries };
}

/** "true" | "false" (so that MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS=false means false). */
function parseBoolean(raw: string): Parsed<boolean> {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === 'false') return { value: value === 'true' };
  return { error: `"${raw}" is not true or false` };
}

/** An IP address (v4 or v6, no brackets) or a host name to listen on. */
function parseListenHost(raw: string): Parsed<string> {
  const host = raw.trim();
  if (isIP(host) !== 0 || (host.length <= 253 && HOST.test(host) && !host.startsWith('['))) return { value: host };
  return { error: `"${raw}" is not an IP address or host name to listen on` };
}

/** 0 (off) or a duration of at least 100 ms. */
function parseTrustInterval(raw: string): Parsed<number> {
  return raw.trim() === '0' ? { value: 0 } : parseDuration(raw, 100);
}

function parseDurationAtMost(raw: string, maxMs: number): Parsed<number> {
  const parsed = parseDuration(raw);
  if ('value' in parsed && parsed.value > maxMs) return { error: `${raw} is longer than ${maxMs} ms` };
  return parsed;
}

function parseWholeNumber(raw: string, min: number, max: number): Parsed<number> {
  if (!/^\d+$/.test(raw.trim())) return { error: `"${raw}" is not a whole number` };
  const value = Number(raw);
  if (value < min || value > max) return { error: `${value} is outside ${min}..${max}` };
  return { value };
}

function parseLogLevel(raw: string): Parsed<LogLevel> {
  const level = LOG_LEVELS.find((l) => l === raw);
  return level !== undefined ? { value: level } : { error: `"${raw}" is not one of ${LOG_LEVELS.join(', ')}` };
}
