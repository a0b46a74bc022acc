/**
 * The Istio → xDS translation: pure functions from a cluster's applied Istio output and
 * discovered workloads to the xDS resources proxyless gRPC clients (and Envoy) read.
 */
export { buildXdsConfig, hashBody, loadAssignmentsFor, localityKey, type XdsConfig } from './translate.ts';
export {
  CLUSTER_TYPE,
  ENDPOINT_TYPE,
  LISTENER_TYPE,
  ROUTE_TYPE,
  XDS_TYPES,
  clusterName,
  listenerName,
  type XdsTypeUrl,
} from './names.ts';
export { parseDuration, type ProtoDuration } from './duration.ts';
export type { ProxyLocality, XdsFinding, XdsInput, XdsResource } from './types.ts';
