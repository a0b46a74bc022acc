/**
 * gRPC's xDS security (gRFC A29): TLS contexts that name certificate provider instances of the
 * workload's bootstrap instead of carrying certificates. Both sides use the one instance
 * `meshrelay` (file_watcher on the agent-written workload certificate, key and root bundle):
 * its identity certificate is presented, its CA bundle validates the peer.
 */
import { CERT_PROVIDER_INSTANCE, DOWNSTREAM_TLS_TYPE, TLS_SOCKET, UPSTREAM_TLS_TYPE } from './names.ts';

/**
 * The part both directions share: own certificate from the instance, peer validated by the
 * instance's CA bundle and, when names are given, one of them as a subject alternative name.
 */
function commonTlsContext(subjectAltNames: readonly string[] = []): Record<string, unknown> {
  return {
    tls_certificate_provider_instance: { instance_name: CERT_PROVIDER_INSTANCE, certificate_name: 'default' },
    validation_context: {
      ca_certificate_provider_instance: { instance_name: CERT_PROVIDER_INSTANCE, certificate_name: 'ROOTCA' },
      ...(subjectAltNames.length > 0 ? { match_subject_alt_names: subjectAltNames.map((exact) => ({ exact })) } : {}),
    },
  };
}

/**
 * A Cluster's transport socket for mesh mTLS: the server's certificate must chain to the mesh
 * roots and, as istiod pins it, carry one of the destination's identities (none given: any mesh
 * identity, e.g. a ServiceEntry for another cluster's service without `subjectAltNames`).
 */
export function upstreamTlsSocket(subjectAltNames: readonly string[] = []): Record<string, unknown> {
  return {
    name: TLS_SOCKET,
    typed_config: { '@type': UPSTREAM_TLS_TYPE, common_tls_context: commonTlsContext(subjectAltNames) },
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
