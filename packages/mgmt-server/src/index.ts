export { parseServerConfig, serverCommand, type ServerConfig } from './config.ts';
export { startManagementServer, type ManagementServer } from './server.ts';
export { decideGate, requiredClusters, type GateConfig, type GateDecision, type GateInput } from './safe-mode-gate.ts';
export { createFileClusterRegistry, type FileRegistryOptions } from './registry/file-cluster-registry.ts';
export type { ClusterRegistry, RegistryChange, RegistrationResult } from './registry/cluster-registry.ts';
export type { ClusterView } from './http/cluster-view.ts';
