import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call.js';
import { MeshrelayError, type KubernetesCluster } from '@meshrelay/api';
import { verifyClientCertificate, type CaBundle, type ClientIdentity } from '@meshrelay/certs';
import { isRevoked, type ClusterRegistry } from '@meshrelay/registry';

/** Optional call metadata naming the cluster an agent speaks for; checked against the certificate. */
export const CLUSTER_METADATA_KEY = 'meshrelay-cluster';

export interface PeerIdentity extends ClientIdentity {
  readonly record: KubernetesCluster;
}

/**
 * Establishes which cluster a Relay call speaks for, from the peer certificate
 * only. The certificate must have been verified by TLS against the relay CA, be
 * valid now, name a registered cluster, carry that registration's uid (a
 * deregistered or re-registered cluster's old certificates stop working) and not
 * predate the cluster's revocation mark. Throws MESHRELAY_ERR_UNAUTHENTICATED or
 * MESHRELAY_ERR_CERTIFICATE_REVOKED with the reason.
 */
export function authenticatePeer(
  call: Pick<ServerSurfaceCall, 'getAuthContext' | 'metadata'>,
  ca: CaBundle,
  registry: ClusterRegistry,
  now: Date,
): PeerIdentity {
  const peer = call.getAuthContext().sslPeerCertificate;
  if (!peer?.raw) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAUTHENTICATED',
      'no verified client certificate: Relay calls need a certificate issued by the relay CA (register first)',
    );
  }
  const identity = verifyClientCertificate(peer.raw, ca, now);
  // Agents may name their cluster in metadata (for logs); it must agree with the certificate.
  const claimed = call.metadata.get(CLUSTER_METADATA_KEY)[0];
  if (claimed !== undefined && String(claimed) !== identity.cluster) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_PERMISSION_DENIED',
      `certificate identifies cluster "${identity.cluster}" but the call claims cluster "${String(claimed)}"`,
    );
  }
  const record = registry.get(identity.cluster);
  if (!record) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAUTHENTICATED',
      `cluster "${identity.cluster}" is not registered (deregistered?)`,
    );
  }
  if (record.metadata.uid !== identity.uid) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAUTHENTICATED',
      `certificate for cluster "${identity.cluster}" belongs to an earlier registration`,
    );
  }
  if (isRevoked(record, identity.notBefore)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE_REVOKED',
      `certificate for cluster "${identity.cluster}" was issued before the cluster was revoked at ${record.spec.revokeCertificatesBefore}; register again with the new token`,
    );
  }
  return { ...identity, record };
}
