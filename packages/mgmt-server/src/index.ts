export { parseServerConfig, serverCommand, type ServerConfig } from './config.ts';
export { startManagementServer, type ManagementServer } from './server.ts';
export { ADMIN_TOKEN_FILE, type AdminCredential } from './admin-credential.ts';
export { ADMIN_TOKEN_SECRET, ADMIN_TOKEN_SECRET_KEY } from './kubernetes-admin-credential.ts';
export { decideGate, requiredClusters, type GateConfig, type GateDecision, type GateInput } from './safe-mode-gate.ts';
export type { HeldOutput } from './held-outputs.ts';
export type { ResourceView } from '@meshrelay/registry';
