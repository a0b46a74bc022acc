/**
 * PURE: reads the labels Meshrelay counts from Envoy access-log entries
 * (envoy.data.accesslog.v3, decoded by proto-loader with keepCase and oneofs).
 *
 * - source: the downstream peer's identity, the first URI SAN of its client
 *   certificate (`common_properties.tls_properties.peer_certificate_properties`,
 *   a SPIFFE ID under Istio mTLS); without mTLS the downstream remote IP
 *   (`common_properties.downstream_remote_address`, port dropped to keep the
 *   label set small); else `unknown`.
 * - destination: `common_properties.upstream_cluster` (Envoy's cluster name,
 *   e.g. `outbound|9080||reviews.default.svc.cluster.local`); for HTTP without
 *   one the request authority (`request.authority`); else `unknown`.
 * - response_code: the HTTP status (`response.response_code`), `0` when Envoy
 *   sent none (the request never got a response).
 */

interface SocketAddress {
  readonly address?: string;
}
interface CertificateProperties {
  readonly subject_alt_name?: readonly { readonly uri?: string; readonly dns?: string }[];
}
interface AccessLogCommon {
  readonly downstream_remote_address?: {
    readonly socket_address?: SocketAddress;
    readonly pipe?: { readonly path?: string };
  };
  readonly tls_properties?: { readonly peer_certificate_properties?: CertificateProperties };
  readonly upstream_cluster?: string;
}

export interface HttpAccessLogEntry {
  readonly common_properties?: AccessLogCommon;
  readonly request?: { readonly authority?: string };
  readonly response?: { readonly response_code?: { readonly value?: number } };
}

export interface TcpAccessLogEntry {
  readonly common_properties?: AccessLogCommon;
}

/** One StreamAccessLogsMessage as proto-loader decodes it (oneof `log_entries`). */
export interface StreamAccessLogsMessage {
  readonly identifier?: { readonly node?: { readonly id?: string }; readonly log_name?: string };
  readonly http_logs?: { readonly log_entry?: readonly HttpAccessLogEntry[] };
  readonly tcp_logs?: { readonly log_entry?: readonly TcpAccessLogEntry[] };
}

export interface ConnectionLabels {
  readonly source: string;
  readonly destination: string;
}

export interface RequestLabels extends ConnectionLabels {
  readonly response_code: string;
}

export const UNKNOWN = 'unknown';

export function sourceOf(common: AccessLogCommon | undefined): string {
  const sans = common?.tls_properties?.peer_certificate_properties?.subject_alt_name ?? [];
  const uri = sans.find((san) => (san.uri ?? '') !== '')?.uri;
  if (uri) return uri;
  const remote = common?.downstream_remote_address;
  return remote?.socket_address?.address || remote?.pipe?.path || UNKNOWN;
}

export function httpLabels(entry: HttpAccessLogEntry): RequestLabels {
  const common = entry.common_properties;
  const code = entry.response?.response_code?.value;
  return {
    source: sourceOf(common),
    destination: common?.upstream_cluster || entry.request?.authority || UNKNOWN,
    response_code:
      typeof code === 'number' && Number.isInteger(code) && code >= 100 && code <= 599 ? String(code) : '0',
  };
}

export function tcpLabels(entry: TcpAccessLogEntry): ConnectionLabels {
  const common = entry.common_properties;
  return { source: sourceOf(common), destination: common?.upstream_cluster || UNKNOWN };
}
