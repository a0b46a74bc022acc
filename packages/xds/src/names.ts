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
