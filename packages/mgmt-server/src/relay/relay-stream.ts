import { Metadata, type ServerDuplexStream } from '@grpc/grpc-js';
import { GRPC_STATUS, OutboundWriter, StreamHeartbeat, relayMessageBytes, toMeshrelayError } from '@meshrelay/api';
import type { Logger } from 'pino';
import type { StreamHandle, StreamKind } from '../connections.ts';
import { authenticatePeer, type PeerIdentity } from './peer-identity.ts';
import { grpcStatusError, type RelayContext } from './relay-context.ts';
import { watchCertificateExpiry } from './stream-certificates.ts';

/** The server-to-agent messages every relay stream carries besides its payload. */
interface ControlMessages {
  chunk?: { data?: Uint8Array | null } | null;
  heartbeat?: { sentUnixMs: number } | null;
  goAway?: { retryAfterMs: number; reason: string } | null;
}

export interface RelayStream<Res> {
  readonly identity: PeerIdentity;
  readonly cluster: string;
  readonly log: Logger;
  isClosed(): boolean;
  /** Queues a message; it is handed to gRPC as the peer takes more (write() backpressure). */
  write(message: Res): void;
  /** Bytes written to this stream that the peer has not taken yet. */
  queuedBytes(): number;
  /** Ends the stream (with a status when error is given); idempotent. */
  finish(error?: Error): void;
  /** Ends the stream with the status of a MeshrelayError (or anything thrown). */
  fail(err: unknown): void;
  /** Records that this stream delivered an accepted snapshot (relay_push_clients_warmed). */
  markWarmed(): void;
}

/**
 * The shared life of a Push or Pull stream: authenticate the peer from its
 * certificate, register the stream (fencing an older one of the same kind),
 * keep heartbeats going both ways, answer a go-away, close at the certificate's
 * expiry, and tidy up exactly once.
 * Returns undefined when the peer was refused (the call is already ended).
 */
export function openRelayStream<Req, Res extends ControlMessages>(
  ctx: RelayContext,
  call: ServerDuplexStream<Req, Res>,
  kind: StreamKind,
  onData: (message: Req, stream: RelayStream<Res>) => void,
  onClose?: () => void,
): RelayStream<Res> | undefined {
  let identity: PeerIdentity;
  try {
    identity = authenticatePeer(call, ctx.ca, ctx.registry, ctx.now());
  } catch (err) {
    const e = toMeshrelayError(err, 'MESHRELAY_ERR_UNAUTHENTICATED');
    ctx.logger.warn({ peer: call.getPeer(), stream: kind, code: e.code, reason: e.message }, 'relay stream refused');
    call.emit('error', grpcStatusError(e.grpcStatus, `${e.code}: ${e.message}`));
    return undefined;
  }
  const cluster = identity.cluster;
  const log = ctx.logger.child({ cluster, stream: kind });
  if (!admitted(ctx, call, kind, cluster, log)) return undefined;
  let closed = false;
  let stopExpiryWatch = (): void => undefined;
  const writer = new OutboundWriter<Res>(call, relayMessageBytes);

  const stream: RelayStream<Res> = {
    identity,
    cluster,
    log,
    isClosed: () => closed,
    write: (message) => {
      if (!closed) writer.write(message);
    },
    queuedBytes: () => writer.queuedBytes,
    finish: (error) => {
      if (closed) return;
      closed = true;
      keepalive.stop();
      stopExpiryWatch();
      onClose?.();
      if (ctx.connections.remove(handle, ctx.now())) log.info(`${kind} stream closed`);
      if (error) {
        call.emit('error', error);
      } else {
        writer.release();
        call.end();
      }
    },
    fail: (err) => {
      const e = toMeshrelayError(err);
      stream.finish(grpcStatusError(e.grpcStatus, `${e.code}: ${e.message}`));
    },
    markWarmed: () => ctx.connections.markWarmed(handle),
  };
  const handle: StreamHandle = {
    id: ctx.connections.nextId(),
    cluster,
    kind,
    peer: call.getPeer(),
    openedAt: ctx.now(),
    certificateNotBefore: identity.notBefore,
    queuedBytes: () => writer.queuedBytes,
    goAway: (retryAfterMs, reason) => {
      stream.write({ goAway: { retryAfterMs, reason } } as Res);
      stream.finish();
    },
    terminate: (code, message) => stream.finish(grpcStatusError(code, message)),
  };
  const keepalive = new StreamHeartbeat({
    intervalMs: ctx.limits.heartbeatIntervalMs,
    timeoutMs: ctx.limits.heartbeatTimeoutMs,
    // A peer that is not reading gets no heartbeats piled up behind the data it has not taken.
    send: () => {
      if (!closed) writer.writeIfIdle({ heartbeat: { sentUnixMs: Date.now() } } as Res);
    },
    onSilence: () => {
      log.warn(`agent silent past the heartbeat timeout; dropping the ${kind} stream`);
      stream.finish(grpcStatusError(GRPC_STATUS.UNAVAILABLE, 'MESHRELAY_ERR_UNAVAILABLE: heartbeat timeout'));
    },
  });
  ctx.connections.add(handle, (old) => {
    log.warn({ fencedPeer: old.peer }, `a newer ${kind} stream for this cluster fenced off the older one`);
    old.terminate(GRPC_STATUS.ABORTED, `MESHRELAY_ERR_FENCED: a newer connection for cluster "${cluster}" took over`);
  });
  log.info({ peer: handle.peer }, `${kind} stream opened`);
  // The response headers tell the agent its stream is open now: otherwise they would go with
  // the first message, which on a pull stream whose agent already holds its output (a resync
  // after a restart) is the first heartbeat, a heartbeat interval later.
  call.sendMetadata(new Metadata());
  stopExpiryWatch = watchCertificateExpiry(identity.notAfter, ctx.now, () => {
    log.info({ notAfter: identity.notAfter.toISOString() }, `client certificate expired; closing the ${kind} stream`);
    stream.finish(
      grpcStatusError(
        GRPC_STATUS.UNAUTHENTICATED,
        `MESHRELAY_ERR_UNAUTHENTICATED: the client certificate expired at ${identity.notAfter.toISOString()}`,
      ),
    );
  });

  call.on('data', (message: Req) => {
    keepalive.heard();
    if (!closed) onData(message, stream);
  });
  call.on('end', () => stream.finish());
  call.on('error', () => stream.finish());
  call.on('cancelled', () => stream.finish());
  return stream;
}

/**
 * Reconnect pacing: a stream beyond the admit rate is answered with a go-away
 * whose retry-after hint is the cluster's slot in the paced wave, and ended
 * before it is registered (no fencing, no state).
 */
function admitted<Res extends ControlMessages>(
  ctx: RelayContext,
  call: ServerDuplexStream<unknown, Res>,
  kind: StreamKind,
  cluster: string,
  log: Logger,
): boolean {
  if (!ctx.admission) return true;
  const decision = ctx.admission.admit(cluster, ctx.now().getTime());
  if (decision.admitted) {
    if (decision.paid) {
      ctx.metrics.sessionsAdmitted.inc();
      log.info('relay session admitted');
    }
    return true;
  }
  ctx.metrics.sessionsPaced.inc();
  log.info({ retryAfterMs: decision.retryAfterMs }, `relay admit rate reached; ${kind} stream told to retry later`);
  call.write({
    goAway: {
      retryAfterMs: decision.retryAfterMs,
      reason: 'relay admit rate reached (--relay-admit-rate); retry after the hint',
    },
  } as Res);
  call.end();
  return false;
}
