import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshrelayError, isRecord, type ErrorCode } from '@meshrelay/api';
import { http, https } from '../node-http.ts';

/** One Kubernetes API call. `body` is sent as JSON (valid YAML too, so also for apply patches). */
export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
}

/**
 * A failed Kubernetes API call. `statusCode` is the HTTP status (0 when no
 * response arrived), `reason` the Status reason (NotFound, Conflict, ...).
 * The Meshrelay code follows the status: 404 → NOT_FOUND, 401/403 → auth,
 * 400/422 → INVALID_RESOURCE, everything else → UNAVAILABLE.
 */
export class KubeApiError extends MeshrelayError {
  readonly statusCode: number;
  readonly reason: string;

  constructor(statusCode: number, reason: string, message: string, options?: { cause?: unknown }) {
    super(codeOfStatus(statusCode), message, options);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

function codeOfStatus(status: number): ErrorCode {
  if (status === 404) return 'MESHRELAY_ERR_NOT_FOUND';
  if (status === 401) return 'MESHRELAY_ERR_UNAUTHENTICATED';
  if (status === 403) return 'MESHRELAY_ERR_PERMISSION_DENIED';
  if (status === 400 || status === 422) return 'MESHRELAY_ERR_INVALID_RESOURCE';
  return 'MESHRELAY_ERR_UNAVAILABLE';
}

/** The HTTP status of an error from this client or from client-node's Watch/ApiException; 0 if none. */
export function statusCodeOf(err: unknown): number {
  if (err instanceof KubeApiError) return err.statusCode;
  if (isRecord(err)) {
    if (typeof err['statusCode'] === 'number') return err['statusCode'];
    if (typeof err['code'] === 'number') return err['code'];
  }
  return 0;
}

export interface KubeHttpOptions {
  /** Per-request timeout (default 30 s). */
  readonly timeoutMs?: number;
}

/**
 * Plain JSON requests to the API server with the credentials, CA and proxy of a
 * KubeConfig (client-node's own agent), for the calls its typed clients do not
 * make without resource discovery: lists by path, server-side apply, delete.
 */
export class KubeHttpClient {
  readonly #kc: KubeConfig;
  readonly #timeoutMs: number;

  constructor(kc: KubeConfig, options: KubeHttpOptions = {}) {
    this.#kc = kc;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Sends one request; resolves with the parsed JSON body of a 2xx answer, rejects with a KubeApiError otherwise. */
  async request<T>(req: KubeRequest): Promise<T> {
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'the kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + req.path);
    for (const [key, value] of Object.entries(req.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const options: RequestOptions = { method: req.method };
    await this.#kc.applyToHTTPSOptions(options);
    const headers: Record<string, string> = { Accept: 'application/json' };
    for (const [key, value] of Object.entries(options.headers ?? {}))
      if (typeof value === 'string') headers[key] = value;
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (payload !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      // Node frames a DELETE body only with an explicit length (no chunked encoding by default for DELETE).
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const what = `${req.method} ${req.path}`;
    const transport = url.protocol === 'http:' ? http : https;
    return new Promise<T>((resolve, reject) => {
      const call = transport.request(url, { ...options, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err) =>
          reject(new KubeApiError(0, 'ConnectionError', `${what}: ${err.message}`, { cause: err })),
        );
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            try {
              resolve((text === '' ? {} : JSON.parse(text)) as T);
            } catch (err) {
              reject(new KubeApiError(status, 'InvalidResponse', `${what}: the answer is not JSON`, { cause: err }));
            }
          } else {
            reject(apiErrorOf(what, status, text));
          }
        });
      });
      call.setTimeout(this.#timeoutMs, () => call.destroy(new Error(`no answer within ${this.#timeoutMs} ms`)));
      call.on('error', (err) =>
        reject(new KubeApiError(0, 'ConnectionError', `${what}: ${err.message}`, { cause: err })),
      );
      call.end(payload);
    });
  }
}

function apiErrorOf(what: string, status: number, text: string): KubeApiError {
  let reason = http.STATUS_CODES[status] ?? 'Error';
  let message = text.slice(0, 500);
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body)) {
      if (typeof body['reason'] === 'string' && body['reason'] !== '') reason = body['reason'];
      if (typeof body['message'] === 'string') message = body['message'];
    }
  } catch {
    // Not a Status object: keep the raw text.
  }
  return new KubeApiError(status, reason, `${what}: ${status} ${reason}${message === '' ? '' : `: ${message}`}`);
}
