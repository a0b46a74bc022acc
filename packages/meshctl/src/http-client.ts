import { MeshrelayError, isErrorCode, type ErrorCode } from '@meshrelay/api';
import type { RevocationResponse } from '@meshrelay/registry';
import type {
  ClusterUpdateRequest,
  ClusterView,
  DataPlaneView,
  HealthResponse,
  HeldOutput,
  InputSnapshot,
  InterestsView,
  OutputSnapshot,
  ReadyResponse,
  RegisterRequest,
  RegistrationResponse,
  ReleaseResponse,
  ResourceQuery,
  ResourceView,
  SafeModeStatus,
  ServerStatus,
  TokenResponse,
} from './api-types.ts';
import type { TrustStatusView } from './trust-types.ts';

export const DEFAULT_SERVER = 'http://localhost:8090';
export const DEFAULT_TIMEOUT_MS = 5000;

export interface ApiClientOptions {
  /** Base URL of the HTTP API, e.g. http://localhost:8090 (a path prefix is kept). */
  readonly server: string;
  /** Sent as "Authorization: Bearer <token>" on every call (the server needs it on all of /api/v1). */
  readonly adminToken?: string | undefined;
  /** Where the token came from, named when the server refuses it (never the value). */
  readonly adminTokenSource?: string | undefined;
  /** Per-request deadline; default 5000 ms. */
  readonly timeoutMs?: number;
}

/**
 * A failed API call. `code` is a catalogue code; `serverCode` is the code the
 * server sent (kept verbatim even when this client does not know it).
 * `status` is the HTTP status, or undefined when no answer arrived at all.
 */
export class ApiError extends MeshrelayError {
  readonly serverCode: string;
  readonly status: number | undefined;
  /** "METHOD /path" of the failed call. */
  readonly request: string;

  constructor(init: {
    code: ErrorCode;
    serverCode?: string;
    status?: number;
    request: string;
    message: string;
    cause?: unknown;
  }) {
    super(init.code, init.message, { cause: init.cause });
    this.name = 'ApiError';
    this.serverCode = init.serverCode ?? init.code;
    this.status = init.status;
    this.request = init.request;
  }
}

/**
 * A typed client of the management server's HTTP API. Every method either
 * resolves with the server's answer or rejects with an ApiError; no method
 * retries. Instances hold no connection state and may be shared.
 */
export interface ApiClient {
  /** The normalized base URL (no trailing slash). */
  readonly server: string;
  listClusters(): Promise<ClusterView[]>;
  /** Rejects with MESHRELAY_ERR_CLUSTER_NOT_FOUND for an unknown cluster. */
  getCluster(name: string): Promise<ClusterView>;
  registerCluster(request: RegisterRequest): Promise<RegistrationResponse>;
  updateCluster(name: string, update: ClusterUpdateRequest): Promise<ClusterView>;
  deregisterCluster(name: string): Promise<void>;
  /** Issues a new relay identity token; the previous one keeps working for the server's overlap window. */
  rotateToken(name: string): Promise<TokenResponse>;
  /** Voids the cluster's certificates issued so far, on every replica, and replaces its token. */
  revokeCluster(name: string): Promise<RevocationResponse>;
  /** Rejects with MESHRELAY_ERR_SNAPSHOT_NOT_FOUND when the server holds none. */
  getInputSnapshot(cluster: string): Promise<InputSnapshot>;
  /** Rejects with MESHRELAY_ERR_SNAPSHOT_NOT_FOUND when none was computed yet. */
  getOutputSnapshot(cluster: string): Promise<OutputSnapshot>;
  status(): Promise<ServerStatus>;
  /** The safe-mode gate of the replica that answers. */
  safeMode(): Promise<SafeModeStatus>;
  /** Outputs the blast-radius guard holds back, sorted by cluster. */
  heldOutputs(): Promise<HeldOutput[]>;
  /**
   * Lets the held output of a cluster go to its agent; resolves with what was
   * released. Rejects with MESHRELAY_ERR_SNAPSHOT_NOT_FOUND when none is held.
   */
  releaseOutput(cluster: string): Promise<HeldOutput>;
  /** Gloo resources with their approval and outputs; rejects with MESHRELAY_ERR_INVALID_ARGUMENT for a bad filter. */
  listResources(query?: ResourceQuery): Promise<ResourceView[]>;
  /** POST /api/v1/clusters/:name/contribution/release: stop carrying an absent cluster's last known contribution. */
  forgetContribution(cluster: string): Promise<{ cluster: string; inputHash: string }>;
  /**
   * GET /api/v1/xds/proxies: per cluster, what its agent reports of its proxies; rejects with
   * MESHRELAY_ERR_CLUSTER_NOT_FOUND for an unknown cluster.
   */
  dataPlane(cluster?: string): Promise<DataPlaneView[]>;
  /** GET /api/v1/interests: per cluster its interest leases and destinations; per destination who receives it. */
  interests(): Promise<InterestsView>;
  /** GET /api/v1/trust: the mesh roots, the rotation and what holds it, each cluster's intermediate. */
  trust(): Promise<TrustStatusView>;
  /** POST /api/v1/trust/rotate: rejects with MESHRELAY_ERR_ROTATION_IN_PROGRESS while one is under way. */
  rotateTrust(): Promise<TrustStatusView>;
  health(): Promise<HealthResponse>;
  /** Resolves for both ready (200) and not ready (503) answers. */
  ready(): Promise<ReadyResponse>;
}

/**
 * One line for a failed call: for an answer from the server, its code, its
 * message, the call and the HTTP status; otherwise the error's message.
 */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiError && err.status !== undefined)
    return `${err.serverCode}: ${err.message} (${err.request}, HTTP ${err.status})`;
  return err instanceof Error ? err.message : String(err);
}

/** Checks the base URL; throws MESHRELAY_ERR_INVALID_ARGUMENT naming it when it is not http(s). */
export function normalizeServerUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--server: "${raw}" is not a URL (expected e.g. ${DEFAULT_SERVER})`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--server: "${raw}" must start with http:// or https://`,
    );
  }
  if (url.search !== '' || url.hash !== '') {
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--server: "${raw}" must not carry a query or fragment`);
  }
  return url.toString().replace(/\/+$/, '');
}

/** Builds a client; throws MESHRELAY_ERR_INVALID_ARGUMENT for a bad server URL or timeout. */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--timeout: ${timeoutMs} is not a positive number of milliseconds`,
    );
  }
  return new HttpApiClient(normalizeServerUrl(options.server), options.adminToken, options.adminTokenSource, timeoutMs);
}

interface RequestOptions {
  readonly body?: unknown;
  /** Non-2xx statuses whose JSON body is a normal answer. */
  readonly acceptStatuses?: readonly number[];
}

const cluster = (name: string): string => `/api/v1/clusters/${encodeURIComponent(name)}`;

class HttpApiClient implements ApiClient {
  readonly server: string;
  readonly #adminToken: string | undefined;
  readonly #adminTokenSource: string | undefined;
  readonly #timeoutMs: number;

  constructor(server: string, adminToken: string | undefined, adminTokenSource: string | undefined, timeoutMs: number) {
    this.server = server;
    this.#adminToken = adminToken;
    this.#adminTokenSource = adminTokenSource;
    this.#timeoutMs = timeoutMs;
  }

  async listClusters(): Promise<ClusterView[]> {
    const answer = await this.#call<{ clusters: ClusterView[] }>('GET', '/api/v1/clusters');
    return answer.clusters;
  }

  getCluster(name: string): Promise<ClusterView> {
    return this.#call('GET', cluster(name));
  }

  registerCluster(request: RegisterRequest): Promise<RegistrationResponse> {
    return this.#call('POST', '/api/v1/clusters', { body: request });
  }

  updateCluster(name: string, update: ClusterUpdateRequest): Promise<ClusterView> {
    return this.#call('PATCH', cluster(name), { body: update });
  }

  async deregisterCluster(name: string): Promise<void> {
    await this.#call('DELETE', cluster(name));
  }

  rotateToken(name: string): Promise<TokenResponse> {
    return this.#call('POST', `${cluster(name)}/token`);
  }

  revokeCluster(name: string): Promise<RevocationResponse> {
    return this.#call('POST', `${cluster(name)}/revoke`);
  }

  getInputSnapshot(name: string): Promise<InputSnapshot> {
    return this.#call('GET', `${cluster(name)}/input`);
  }

  getOutputSnapshot(name: string): Promise<OutputSnapshot> {
    return this.#call('GET', `${cluster(name)}/output`);
  }

  status(): Promise<ServerStatus> {
    return this.#call('GET', '/api/v1/status');
  }

  safeMode(): Promise<SafeModeStatus> {
    return this.#call('GET', '/api/v1/safe-mode');
  }

  async dataPlane(name?: string): Promise<DataPlaneView[]> {
    const query = name === undefined ? '' : `?cluster=${encodeURIComponent(name)}`;
    const answer = await this.#call<{ clusters: DataPlaneView[] }>('GET', `/api/v1/xds/proxies${query}`);
    return answer.clusters;
  }

  interests(): Promise<InterestsView> {
    return this.#call('GET', '/api/v1/interests');
  }

  async heldOutputs(): Promise<HeldOutput[]> {
    const answer = await this.#call<{ held: HeldOutput[] }>('GET', '/api/v1/outputs/held');
    return answer.held;
  }

  async releaseOutput(name: string): Promise<HeldOutput> {
    const answer = await this.#call<ReleaseResponse>('POST', `${cluster(name)}/output/release`);
    return answer.released;
  }

  async listResources(query: ResourceQuery = {}): Promise<ResourceView[]> {
    const params = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined));
    const search = params.size === 0 ? '' : `?${params.toString()}`;
    const answer = await this.#call<{ resources: ResourceView[] }>('GET', `/api/v1/resources${search}`);
    return answer.resources;
  }

  /** Lets an absent cluster's carried contribution go; answers the input hash that was carried. */
  async forgetContribution(name: string): Promise<{ cluster: string; inputHash: string }> {
    const answer = await this.#call<{ released: { cluster: string; inputHash: string } }>(
      'POST',
      `${cluster(name)}/contribution/release`,
    );
    return answer.released;
  }

  trust(): Promise<TrustStatusView> {
    return this.#call('GET', '/api/v1/trust');
  }

  rotateTrust(): Promise<TrustStatusView> {
    return this.#call('POST', '/api/v1/trust/rotate');
  }

  health(): Promise<HealthResponse> {
    return this.#call('GET', '/healthz');
  }

  ready(): Promise<ReadyResponse> {
    return this.#call('GET', '/readyz', { acceptStatuses: [503] });
  }

  async #call<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const request = `${method} ${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (this.#adminToken !== undefined) headers['authorization'] = `Bearer ${this.#adminToken}`;
    let response: Response;
    try {
      response = await fetch(this.server + path, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw this.#transportError(err, request);
    }
    const text = await readBody(response, request, this.server);
    if (!response.ok && !(options.acceptStatuses ?? []).includes(response.status)) {
      throw errorFromResponse(response, text, request, this.server, this.#refusalHint());
    }
    if (response.status === 204 || text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ApiError({
        code: 'MESHRELAY_ERR_PROTOCOL',
        status: response.status,
        request,
        message: `${request}: the server at ${this.server} answered with something that is not JSON (is this the Meshrelay HTTP API?)`,
        cause: err,
      });
    }
  }

  /** Said after a 401: which token the server refused, or that none was sent. */
  #refusalHint(): string {
    if (this.#adminToken === undefined) return ' (meshctl sent no admin token)';
    return this.#adminTokenSource === undefined ? '' : ` (meshctl sent the admin token from ${this.#adminTokenSource})`;
  }

  #transportError(err: unknown, request: string): ApiError {
    if (err instanceof DOMException && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
      return new ApiError({
        code: 'MESHRELAY_ERR_UNAVAILABLE',
        request,
        message: `the management server at ${this.server} did not answer ${request} within ${this.#timeoutMs} ms`,
        cause: err,
      });
    }
    return new ApiError({
      code: 'MESHRELAY_ERR_UNAVAILABLE',
      request,
      message: `cannot reach the management server at ${this.server}: ${describeNetworkError(err)}`,
      cause: err,
    });
  }
}

async function readBody(response: Response, request: string, server: string): Promise<string> {
  try {
    return await response.text();
  } catch (err) {
    throw new ApiError({
      code: 'MESHRELAY_ERR_UNAVAILABLE',
      status: response.status,
      request,
      message: `the management server at ${server} broke off its answer to ${request}: ${describeNetworkError(err)}`,
      cause: err,
    });
  }
}

/** The server's `{code, message}` when it sent one; otherwise a code chosen by HTTP status. */
function errorFromResponse(
  response: Response,
  text: string,
  request: string,
  server: string,
  refusalHint: string,
): ApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const sent = body as { code?: unknown; message?: unknown } | undefined;
  if (typeof sent?.code === 'string' && typeof sent.message === 'string') {
    return new ApiError({
      code: isErrorCode(sent.code) ? sent.code : codeForStatus(response.status),
      serverCode: sent.code,
      status: response.status,
      request,
      message: response.status === 401 ? `${sent.message}${refusalHint}` : sent.message,
    });
  }
  const statusText = response.statusText ? ` ${response.statusText}` : '';
  return new ApiError({
    code: codeForStatus(response.status),
    status: response.status,
    request,
    message: `the server at ${server} answered HTTP ${response.status}${statusText} without a Meshrelay error body (is this the Meshrelay HTTP API?)`,
  });
}

function codeForStatus(status: number): ErrorCode {
  if (status === 401) return 'MESHRELAY_ERR_UNAUTHENTICATED';
  if (status === 403) return 'MESHRELAY_ERR_PERMISSION_DENIED';
  if (status === 404) return 'MESHRELAY_ERR_NOT_FOUND';
  if (status === 429) return 'MESHRELAY_ERR_RATE_LIMITED';
  if (status >= 500) return 'MESHRELAY_ERR_UNAVAILABLE';
  return 'MESHRELAY_ERR_INVALID_ARGUMENT';
}

/** fetch() hides the socket error in `cause` (an AggregateError when several addresses were tried). */
function describeNetworkError(err: unknown): string {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (cause instanceof AggregateError && cause.errors.length > 0) {
    return [...new Set(cause.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))))].join('; ');
  }
  if (cause instanceof Error) return cause.message || (cause as NodeJS.ErrnoException).code || cause.name;
  return String(cause);
}
