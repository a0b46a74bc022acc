import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { toMeshrelayError, type relay } from '@meshrelay/api';
import type { MeshTrustService } from '../mesh-trust/mesh-trust-service.ts';
import { authenticatePeer } from './peer-identity.ts';
import { grpcStatusError, type RelayContext } from './relay-context.ts';

/**
 * Relay.MeshTrust over mTLS: the cluster is the one of the client certificate, never a field.
 * Without a mesh trust service (none configured) every call answers `enabled: false`, so an agent
 * writes and removes nothing.
 */
export function handleMeshTrust(
  ctx: RelayContext,
  trust: MeshTrustService | undefined,
  call: ServerUnaryCall<relay.v1.MeshTrustRequest, relay.v1.IMeshTrustResponse>,
  callback: sendUnaryData<relay.v1.IMeshTrustResponse>,
): void {
  const work = async () => {
    const identity = authenticatePeer(call, ctx.ca, ctx.registry, ctx.now());
    return trust === undefined ? { enabled: false } : trust.handle(identity.cluster, call.request);
  };
  work().then(
    (response) => callback(null, response),
    (err: unknown) => {
      const e = toMeshrelayError(err);
      ctx.logger.warn({ code: e.code, reason: e.message }, 'mesh trust request refused');
      callback(grpcStatusError(e.grpcStatus, `${e.code}: ${e.message}`));
    },
  );
}
