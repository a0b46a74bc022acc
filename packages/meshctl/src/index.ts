export { runMeshctl, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './cli.ts';
export type { GlobalOptions, MeshctlIo, OutputFormat, OutputStream } from './cli-context.ts';
export {
  ApiError,
  DEFAULT_SERVER,
  DEFAULT_TIMEOUT_MS,
  createApiClient,
  describeFailure,
  normalizeServerUrl,
  type ApiClient,
  type ApiClientOptions,
} from './http-client.ts';
export type {
  ClusterUpdateRequest,
  ClusterView,
  HealthResponse,
  HeldOutput,
  ReadyResponse,
  RegisterRequest,
  RegistrationResponse,
  RelayEndpoint,
  ReleaseResponse,
  SafeModeStatus,
  ServerStatus,
  TokenResponse,
} from './api-types.ts';
export { formatAge, formatTimeLeft, renderTable, shortHash } from './format.ts';
export { renderCheckReport, runChecks, type CheckReport, type CheckResult } from './commands/check.ts';
export { fillWaysOut, renderSafeMode, type WayOut } from './commands/safe-mode.ts';
export { gatherDebugReport, type DebugReport } from './commands/debug.ts';
export {
  buildXdsBootstrap,
  MESH_CERT_PROVIDER,
  SERVER_LISTENER_TEMPLATE,
  type WorkloadCerts,
  type XdsBootstrap,
} from './commands/xds.ts';
