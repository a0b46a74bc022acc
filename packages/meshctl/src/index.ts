export { runMeshctl, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './cli.ts';
export type { GlobalOptions, MeshctlIo, OutputFormat, OutputStream } from './cli-context.ts';
export { ApiError, DEFAULT_SERVER, DEFAULT_TIMEOUT_MS, createApiClient, normalizeServerUrl, type ApiClient, type ApiClientOptions } from './http-client.ts';
export type {
  ClusterUpdateRequest,
  ClusterView,
  HealthResponse,
  ReadyResponse,
  RegisterRequest,
  RegistrationResponse,
  RelayEndpoint,
  ServerStatus,
  TokenResponse,
} from './api-types.ts';
export { formatAge, renderTable, shortHash } from './format.ts';
export { gatherDebugReport, type DebugReport } from './commands/debug.ts';
