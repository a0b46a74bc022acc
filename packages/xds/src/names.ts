/** Type URLs of the four resource types a proxyless gRPC client subscribes to. */
export const LISTENER_TYPE = 'type.googleapis.com/envoy.config.listener.v3.Listener';
export const ROUTE_TYPE = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
export const CLUSTER_TYPE = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
export const ENDPOINT_TYPE = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
export const XDS_TYPES = [LISTENER_TYPE, ROUTE_TYPE, CLUSTER_TYPE, ENDPOINT_TYPE] as const;
export type XdsTypeUrl = (typeof XDS_TYPES)[number];

export const HCM_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
export const ROUTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';
export const FAULT_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault';
export const FAULT_FILTER = 'envoy.filters.http.fault';

/**
 * The Envoy proto files (paths under Envoy's api root) of every message the served resources
 * carry, Any payloads included: a new filter or transport socket the translation emits is added
 * here, and the agent's serializer and the field checks of the tests both follow.
 */
export const RESOURCE_PROTO_FILES: readonly string[] = [
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/filters/http/fault/v3/fault.proto',
  'envoy/extensions/filters/http/rbac/v3/rbac.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
];
export const ROUTER_FILTER = 'envoy.filters.http.router';

/** Labels Istio puts on every endpoint itself. */
export const CLUSTER_LABEL = 'topology.istio.io/cluster';
export const NETWORK_LABEL = 'topology.istio.io/network';
export const REGION_LABEL = 'topology.kubernetes.io/region';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
export const SUBZONE_LABEL = 'topology.istio.io/subzone';

/** istiod's outbound cluster name; also the EDS service name. */
export function clusterName(host: string, port: number, subset = ''): string {
  return `outbound|${port}|${subset}|${host}`;
}

/** The listener (and route configuration) name a client asks for with `xds:///host:port`. */
export function listenerName(host: string, port: number): string {
  return `${host}:${port}`;
}

/**
 * A host as Istio resolves it in a resource of `namespace`: a short name (no dot) is a
 * Service of that namespace.
 */
export function resolveHost(host: string, namespace: string, clusterDomain: string): string {
  return host.includes('.') || host === '*' ? host : `${host}.${namespace}.svc.${clusterDomain}`;
}

/** Whether an Istio host pattern (`*`, `*.suffix` or exact) covers `host`. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/** The certificate provider instance the workload bootstrap maps to its mesh certificate files. */
export const CERT_PROVIDER_INSTANCE = 'meshrelay';
/** How an XdsServer names the Listener of the address it binds (its bootstrap's template, `%s` = `ip:port`). */
export const SERVER_LISTENER_PREFIX = 'grpc/server?xds.resource.listening_address=';
export const SERVER_LISTENER_TEMPLATE = `${SERVER_LISTENER_PREFIX}%s`;
export const HCM_FILTER = 'envoy.filters.network.http_connection_manager';
export const RBAC_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC';
export const TLS_SOCKET = 'envoy.transport_sockets.tls';
export const UPSTREAM_TLS_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
export const DOWNSTREAM_TLS_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext';

/** The server Listener name for `address:port` (IPv6 addresses in brackets, as grpc-js formats them). */
export function serverListenerName(address: string, port: number): string {
  return `${SERVER_LISTENER_PREFIX}${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** The address and port a server Listener name is for, or undefined when it is not one. */
export function parseServerListenerName(name: string): { address: string; port: number } | undefined {
  if (!name.startsWith(SERVER_LISTENER_PREFIX)) return undefined;
  const hostPort = name.slice(SERVER_LISTENER_PREFIX.length);
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(hostPort);
  if (match === null) return undefined;
  const port = Number(match[3]);
  if (port <= 0 || port > 65_535) return undefined;
  return { address: match[1] ?? match[2] ?? '', port };
}
