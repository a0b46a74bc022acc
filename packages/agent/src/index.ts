export { Agent, type AgentTuning } from './agent.ts';
export {
  AccessLogSink,
  envoyProtoIncludeDirs,
  loadAccessLogService,
  type AccessLogSinkOptions,
} from './observability/access-log-sink.ts';
export {
  httpLabels,
  sourceOf,
  tcpLabels,
  type RequestLabels,
  type ConnectionLabels,
  type StreamAccessLogsMessage,
} from './observability/access-log-entry.ts';
export { createAgentMetrics, type AgentMetrics, type AgentMetricsOptions } from './observability/agent-metrics.ts';
export {
  Backoff,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  fullJitter,
  type BackoffOptions,
  type Clock,
  type RandomSource,
} from '@meshrelay/api';
export { createAgentBackends, type AgentBackends } from './agent-backends.ts';
export {
  BACKENDS,
  LEADER_ELECTION_MODES,
  LOG_LEVELS,
  buildAgentCommand,
  parseAddressList,
  parseAgentConfig,
  parseByteSize,
  parseDuration,
  validateAgentOptions,
  type AgentConfig,
  type Backend,
  type LeaderElectionMode,
  type LogLevel,
  type Parsed,
} from './config.ts';
export {
  FileCredentialStore,
  needsRenewal,
  type ClientCredentials,
  type CredentialStore,
  type FileCredentialStoreOptions,
} from './credentials/credential-store.ts';
export {
  KubernetesSecretCredentialStore,
  type KubernetesSecretCredentialStoreOptions,
} from './credentials/kubernetes-secret-credential-store.ts';
export type { DiscoveryProvider } from './discovery/discovery-provider.ts';
export { FileDiscoveryProvider, type FileProviderOptions } from './discovery/file-provider.ts';
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_TOTAL_BYTES,
  listManifestFiles,
  type ManifestLimits,
} from './discovery/manifest-reader.ts';
export { assembleInputSnapshot, mergeManifests } from './discovery/manifest-snapshot.ts';
export { HealthServer, type AgentStatus, type HealthServerOptions, type LeadershipStatus } from './health-server.ts';
export { LeaderDuties, type LeaderDutiesOptions } from './leader/leader-duties.ts';
export { createAgentElector } from './leader/leader-election.ts';
export { LeaderTermProvider } from './leader/leader-term-provider.ts';
export { compareInputProblems, formatInputProblem, type InputProblem } from './discovery/input-problem.ts';
export { toInputResource, type FieldProblem, type InputConversion } from './discovery/input-resource.ts';
export {
  KubeApiError,
  KubeHttpClient,
  statusCodeOf,
  type KubeHttpOptions,
  type KubeRequest,
} from './kube/kube-http.ts';
export {
  APPLIED_KINDS,
  WATCHED_KINDS,
  collectionPath,
  findAppliedKind,
  objectPath,
  type KubeKind,
} from './kube/kube-kinds.ts';
export { KindWatch, type KindWatchOptions, type KindWatchState } from './discovery/kube-kind-watch.ts';
export {
  DEFAULT_FIELD_MANAGER,
  KubernetesOutputApplier,
  ownedObjectOf,
  type ApplyReport,
  type KubernetesApplierOptions,
  type OwnedObject,
} from './apply/kubernetes-applier.ts';
export { KubernetesDiscoveryProvider, type KubernetesProviderOptions } from './discovery/kubernetes-provider.ts';
export type { OutputApplier } from './apply/output-applier.ts';
export { checkAppliedOutput, readAppliedOutput, writeAppliedOutput } from './apply/output-state.ts';
export {
  parseManifest,
  type ManifestEntry,
  type ParsedManifest,
  type ResourceValidator,
} from './discovery/manifest-parser.ts';
export {
  FileOutputWriter,
  resourceFileName,
  writeFileAtomic,
  type AppliedOutput,
  type OutputWriterOptions,
} from './apply/output-writer.ts';
export {
  RelayClient,
  type PushRecord,
  type RelayClientEvents,
  type RelayClientOptions,
  type RelayClientStatus,
} from './relay/relay-client.ts';
export type { PushAck } from './relay/push-stream.ts';
export type { SessionOutcome } from './relay/session-outcome.ts';
export { AdsServer, type AdsServerOptions } from './xds/ads-server.ts';
export { ADS_PROTO_OPTIONS, loadAdsService, type DiscoveryRequest, type DiscoveryResponse } from './xds/ads-protos.ts';
export type { ProxyStatus } from './xds/ads-stream.ts';
