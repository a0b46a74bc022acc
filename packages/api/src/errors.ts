/**
 * The one catalogue of coded errors. Each code carries the gRPC status and the
 * HTTP status it maps to at the edges; tests assert on `code`.
 */

// gRPC status numbers (grpc/status.h); kept here so the catalogue has no grpc dependency.
export const GRPC_STATUS = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

interface ErrorSpec {
  readonly grpc: number;
  readonly http: number;
  readonly summary: string;
}

export const ERROR_CATALOGUE = {
  MESHRELAY_ERR_INVALID_ARGUMENT: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a request field is missing or malformed',
  },
  MESHRELAY_ERR_INVALID_RESOURCE: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a resource is malformed or fails its schema',
  },
  MESHRELAY_ERR_INVALID_CONFIG: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a configuration value is invalid',
  },
  MESHRELAY_ERR_SNAPSHOT_TOO_LARGE: {
    grpc: GRPC_STATUS.RESOURCE_EXHAUSTED,
    http: 413,
    summary: 'a snapshot exceeds the configured size or resource limit',
  },
  MESHRELAY_ERR_SNAPSHOT_UNDECODABLE: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a snapshot could not be decoded',
  },
  MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH: {
    grpc: GRPC_STATUS.DATA_LOSS,
    http: 400,
    summary: 'a snapshot does not match its declared hash',
  },
  MESHRELAY_ERR_SNAPSHOT_STALE: {
    grpc: GRPC_STATUS.FAILED_PRECONDITION,
    http: 409,
    summary: 'a snapshot is older than the one already held',
  },
  MESHRELAY_ERR_DELTA_BASE_MISMATCH: {
    grpc: GRPC_STATUS.FAILED_PRECONDITION,
    http: 409,
    summary: 'a delta snapshot does not apply to the snapshot the receiver holds; send it full',
  },
  MESHRELAY_ERR_DELTA_LIMIT: {
    grpc: GRPC_STATUS.RESOURCE_EXHAUSTED,
    http: 413,
    summary: 'a delta would cost more than a patch limit allows (operations, work, size or nesting); send it full',
  },
  MESHRELAY_ERR_SNAPSHOT_TIMEOUT: {
    grpc: GRPC_STATUS.DEADLINE_EXCEEDED,
    http: 408,
    summary: 'a snapshot did not arrive completely within the transfer deadline',
  },
  MESHRELAY_ERR_PROTOCOL: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a stream message arrived out of order',
  },
  MESHRELAY_ERR_UNAUTHENTICATED: {
    grpc: GRPC_STATUS.UNAUTHENTICATED,
    http: 401,
    summary: 'the caller could not be authenticated',
  },
  MESHRELAY_ERR_TOKEN_INVALID: {
    grpc: GRPC_STATUS.UNAUTHENTICATED,
    http: 401,
    summary: 'the relay identity token is wrong, expired or unknown',
  },
  MESHRELAY_ERR_TOKEN_REUSED: {
    grpc: GRPC_STATUS.PERMISSION_DENIED,
    http: 409,
    summary: 'the relay identity token already registered another key',
  },
  MESHRELAY_ERR_CERTIFICATE_REVOKED: {
    grpc: GRPC_STATUS.UNAUTHENTICATED,
    http: 401,
    summary: 'the client certificate was issued before the cluster was revoked',
  },
  MESHRELAY_ERR_RATE_LIMITED: {
    grpc: GRPC_STATUS.RESOURCE_EXHAUSTED,
    http: 429,
    summary: 'too many failed attempts; wait and retry',
  },
  MESHRELAY_ERR_PERMISSION_DENIED: {
    grpc: GRPC_STATUS.PERMISSION_DENIED,
    http: 403,
    summary: 'the caller may not act on this cluster',
  },
  MESHRELAY_ERR_NOT_FOUND: { grpc: GRPC_STATUS.NOT_FOUND, http: 404, summary: 'no such route or object' },
  MESHRELAY_ERR_CLUSTER_NOT_FOUND: { grpc: GRPC_STATUS.NOT_FOUND, http: 404, summary: 'no such registered cluster' },
  MESHRELAY_ERR_CLUSTER_EXISTS: {
    grpc: GRPC_STATUS.ALREADY_EXISTS,
    http: 409,
    summary: 'the cluster is already registered',
  },
  MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: {
    grpc: GRPC_STATUS.NOT_FOUND,
    http: 404,
    summary: 'no snapshot is held for this cluster',
  },
  MESHRELAY_ERR_FENCED: {
    grpc: GRPC_STATUS.ABORTED,
    http: 409,
    summary: 'a newer connection for the same cluster took over',
  },
  MESHRELAY_ERR_ROTATION_IN_PROGRESS: {
    grpc: GRPC_STATUS.FAILED_PRECONDITION,
    http: 409,
    summary: 'a mesh root rotation is under way',
  },
  MESHRELAY_ERR_CERTIFICATE: {
    grpc: GRPC_STATUS.INVALID_ARGUMENT,
    http: 400,
    summary: 'a certificate or CSR is invalid',
  },
  MESHRELAY_ERR_TRANSLATION: {
    grpc: GRPC_STATUS.INTERNAL,
    http: 500,
    summary: 'translation produced an invalid output',
  },
  MESHRELAY_ERR_UNAVAILABLE: { grpc: GRPC_STATUS.UNAVAILABLE, http: 503, summary: 'a dependency is unavailable' },
  MESHRELAY_ERR_INTERNAL: { grpc: GRPC_STATUS.INTERNAL, http: 500, summary: 'an internal error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class MeshrelayError extends Error {
  readonly code: ErrorCode;
  readonly grpcStatus: number;
  readonly httpStatus: number;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MeshrelayError';
    this.code = code;
    this.grpcStatus = ERROR_CATALOGUE[code].grpc;
    this.httpStatus = ERROR_CATALOGUE[code].http;
  }

  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, value);
}

/** Wraps anything thrown into a MeshrelayError, keeping the original as `cause`. */
export function toMeshrelayError(err: unknown, fallback: ErrorCode = 'MESHRELAY_ERR_INTERNAL'): MeshrelayError {
  if (err instanceof MeshrelayError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new MeshrelayError(fallback, message, { cause: err });
}
