export { Agent, type AgentTuning } from './agent.ts';
export { AccessLogSink, envoyProtoIncludeDirs, loadAccessLogService, type AccessLogSinkOptions } from './access-log-sink.ts';
export { httpLabels, sourceOf, tcpLabels, type RequestLabels, type ConnectionLabels, type StreamAccessLogsMessage } from './access-log-entry.ts';
export { createAgentMetrics, type AgentMetrics, type AgentMetricsOptions } from './agent-metrics.ts';
export { Backoff, DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, fullJitter, type BackoffOptions, type Clock, type RandomSource } from './backoff.ts';
export {
  LEADER_ELECTION_MODES,
  LOG_LEVELS,
  buildAgentCommand,
  parseAddressList,
  parseAgentConfig,
  parseByteSize,
  parseDuration,
  validateAgentOptions,
  type AgentConfig,
  type LeaderElectionMode,
  type LogLevel,
  type Parsed,
} from './config.ts';
export { CredentialStore, needsRenewal, type ClientCredentials, type CredentialStoreOptions } from './credential-store.ts';
export type { DiscoveryProvider } from './discovery-provider.ts';
export { FileDiscoveryProvider, listManifestFiles, mergeManifests, type FileProviderOptions } from './file-provider.ts';
export { HealthServer, type AgentStatus, type HealthServerOptions, type LeadershipStatus } from './health-server.ts';
export { LeaderDuties, type LeaderDutiesOptions } from './leader-duties.ts';
export { createAgentElector } from './leader-election.ts';
export { LeaderTermProvider } from './leader-term-provider.ts';
export { compareInputProblems, formatInputProblem, type InputProblem } from './input-problem.ts';
export { parseManifest, type ManifestEntry, type ParsedManifest, type ResourceValidator } from './manifest-parser.ts';
export { FileOutputWriter, resourceFileName, writeFileAtomic, type AppliedOutput, type OutputWriterOptions } from './output-writer.ts';
export { RelayClient, type PushRecord, type RelayClientEvents, type RelayClientOptions, type RelayClientStatus } from './relay-client.ts';
export type { PushAck } from './push-stream.ts';
export type { SessionOutcome } from './session-outcome.ts';
