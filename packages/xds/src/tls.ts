/**
 * gRPC's xDS security (gRFC A29): TLS contexts that name certificate provider instances of the
 * workload's bootstrap instead of carrying certificates. Both sides use the one instance
 * `meshrelay` (file_watcher on the agent-written workload certificate, key and root bundle):
 * its identity certificate is presented, its CA bundle validates the peer.
 */
import { CERT_PROVIDER_INSTANCE, DOWNSTREAM_TLS_TYPE, TLS_SOCKET, UPSTREAM_TLS_TYPE } from './names.ts';

/** The part both directions share: own certificate from the instance, peer validated by the instance's CA bundle. */
function commonTlsContext(): Record<string, unknown> {
  return {
    tls_certificate_provider_instance: { instance_name: CERT_PROVIDER_INSTANCE, certificate_name: 'default' },
    validation_context: {
      ca_certificate_provider_instance: { instance_name: CERT_PROVIDER_INSTANCE, certificate_name: 'ROOTCA' },
    },
  };
}

/**
 * A Cluster's transport socket for mesh mTLS. The server's certificate is validated against the
 * mesh roots; it is not pinned to the destination's service accounts (Istio's
 * match_subject_alt_names), which across clusters would need each remote cluster's trust domain.
 */
export function upstreamTlsSocket(): Record<string, unknown> {
  return {
    name: TLS_SOCKET,
    typed_config: { '@type': UPSTREAM_TLS_TYPE, common_tls_context: commonTlsContext() },
  };
}

/**
 * A server Listener's transport socket. PERMISSIVE (Istio's default) still serves TLS, as istiod
 * does for proxyless gRPC, because gRPC cannot sniff plaintext and TLS on one port; STRICT
 * also requires a client certificate from the mesh.
 */
export function downstreamTlsSocket(requireClientCertificate: boolean): Record<string, unknown> {
  return {
    name: TLS_SOCKET,
    typed_config: {
      '@type': DOWNSTREAM_TLS_TYPE,
      common_tls_context: commonTlsContext(),
      // Written even when false: grpc-js-xds compares a new Listener with the one it holds by the
      // old one's bytes only, so a context that merely appended this field would look unchanged.
      require_client_certificate: { value: requireClientCertificate },
    },
  };
}
