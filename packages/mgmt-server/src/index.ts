export { parseServerConfig, serverCommand, type ServerConfig } from './config.ts';
export { startManagementServer, type ManagementServer } from './server.ts';
export { decideGate, requiredClusters, type GateConfig, type GateDecision, type GateInput } from './safe-mode-gate.ts';
export type { HeldOutput } from './held-outputs.ts';
