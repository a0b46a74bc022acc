import { status as GrpcStatus } from '@grpc/grpc-js';
import { MeshrelayError } from '@meshrelay/api';

/** Why a connection to one management server ended; decides what the agent does next. */
export type SessionOutcome =
  | { readonly kind: 'stopped' }
  /** The client certificate was renewed: reconnect at once with it, same server. */
  | { readonly kind: 'renewed' }
  | { readonly kind: 'go-away'; readonly retryAfterMs: number; readonly reason: string }
  /** A newer agent for this cluster took over. */
  | { readonly kind: 'fenced'; readonly message: string }
  /** The server refused the client certificate: register again with the token. */
  | { readonly kind: 'unauthenticated'; readonly message: string }
  /** Nothing arrived from the server for the heartbeat timeout. */
  | { readonly kind: 'silent'; readonly stream: string }
  | { readonly kind: 'failed'; readonly code: number; readonly message: string };

interface GrpcLikeError {
  readonly code?: unknown;
  readonly details?: unknown;
  readonly message?: unknown;
}

/** Maps an error from a relay call (gRPC status or local failure) onto an outcome. */
export function outcomeOfError(err: unknown): SessionOutcome {
  const e = (err ?? {}) as GrpcLikeError;
  const code = typeof e.code === 'number' ? e.code : GrpcStatus.UNKNOWN;
  const message = typeof e.details === 'string' && e.details !== '' ? e.details : String(e.message ?? err);
  if (err instanceof MeshrelayError) {
    return { kind: 'failed', code: err.grpcStatus, message: `${err.code}: ${err.message}` };
  }
  if (code === GrpcStatus.ABORTED && message.includes('MESHRELAY_ERR_FENCED')) return { kind: 'fenced', message };
  if (code === GrpcStatus.UNAUTHENTICATED || code === GrpcStatus.PERMISSION_DENIED)
    return { kind: 'unauthenticated', message };
  return { kind: 'failed', code, message };
}

/** The outcome of a stream that ended with `status` (OK = the server closed it without an error). */
export function outcomeOfStatus(
  status: { readonly code: number; readonly details: string },
  stream: string,
): SessionOutcome {
  if (status.code === GrpcStatus.OK)
    return { kind: 'failed', code: GrpcStatus.UNAVAILABLE, message: `server closed the ${stream} stream` };
  return outcomeOfError(status);
}

/** One-line description for logs. */
export function describeOutcome(outcome: SessionOutcome): string {
  switch (outcome.kind) {
    case 'go-away':
      return `server asked to move (go-away, retry after ${outcome.retryAfterMs} ms): ${outcome.reason}`;
    case 'fenced':
      return `fenced: a newer agent for this cluster took over (${outcome.message})`;
    case 'unauthenticated':
      return `client certificate refused: ${outcome.message}`;
    case 'silent':
      return `server silent on the ${outcome.stream} stream past the heartbeat timeout`;
    case 'failed':
      return `${GrpcStatus[outcome.code] ?? outcome.code}: ${outcome.message}`;
    default:
      return outcome.kind;
  }
}
