export { Agent, type AgentTuning } from './agent.ts';
export { AccessLogSink, envoyProtoIncludeDirs, loadAccessLogService, type AccessLogSinkOptions } from './access-log-sink.ts';
export { httpLabels, sourceOf, tcpLabels, type RequestLabels, type ConnectionLabels, type StreamAccessLogsMessage } from './access-log-entry.ts';
export { createAgentMetrics, type AgentMetrics, type AgentMetricsOptions } from './agent-metrics.ts';
export { Backoff, DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, fullJitter, type BackoffOptions, type Clock, type RandomSource } from '@meshrelay/api';
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
export { FileCredentialStore, needsRenewal, type ClientCredentials, type CredentialStore, type FileCredentialStoreOptions } from './credential-store.ts';
export { KubernetesSecretCredentialStore, type KubernetesSecretCredentialStoreOptions } from './kubernetes-secret-credential-store.ts';
export type { DiscoveryProvider } from './discovery-provider.ts';
export { FileDiscoveryProvider, type FileProviderOptions } from './file-provider.ts';
export { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES, listManifestFiles, type ManifestLimits } from './manifest-reader.ts';
export { assembleInputSnapshot, mergeManifests } from './manifest-snapshot.ts';
export { HealthServer, type AgentStatus, type HealthServerOptions, type LeadershipStatus } from './health-server.ts';
export { LeaderDuties, type LeaderDutiesOptions } from './leader-duties.ts';
export { createAgentElector } from './leader-election.ts';
export { LeaderTermProvider } from './leader-term-provider.ts';
export { compareInputProblems, formatInputProblem, type InputProblem } from './input-problem.ts';
export { toInputResource, type FieldProblem, type InputConversion } from './input-resource.ts';
export { KubeApiError, KubeHttpClient, statusCodeOf, type KubeHttpOptions, type KubeRequest } from './kube-http.ts';
export { APPLIED_KINDS, WATCHED_KINDS, collectionPath, findAppliedKind, objectPath, type KubeKind } from './kube-kinds.ts';
export { KindWatch, type KindWatchOptions, type KindWatchState } from './kube-kind-watch.ts';
export { DEFAULT_FIELD_MANAGER, KubernetesOutputApplier, ownedObjectOf, type ApplyReport, type KubernetesApplierOptions, type OwnedObject } from './kubernetes-applier.ts';
export { KubernetesDiscoveryProvider, type KubernetesProviderOptions } from './kubernetes-provider.ts';
export type { OutputApplier } from './output-applier.ts';
export { checkAppliedOutput, readAppliedOutput, writeAppliedOutput } from './output-state.ts';
export { parseManifest, type ManifestEntry, type ParsedManifest, type ResourceValidator } from './manifest-parser.ts';
export { FileOutputWriter, resourceFileName, writeFileAtomic, type AppliedOutput, type OutputWriterOptions } from './output-writer.ts';
export { RelayClient, type PushRecord, type RelayClientEvents, type RelayClientOptions, type RelayClientStatus } from './relay-client.ts';
export type { PushAck } from './push-stream.ts';
export type { SessionOutcome } from './session-outcome.ts';
