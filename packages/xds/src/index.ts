/**
 * The Istio → xDS translation: pure functions from a cluster's applied Istio output and
 * discovered workloads to the xDS resources proxyless gRPC clients (and Envoy) read.
 */
export {
  buildXdsConfig,
  hashBody,
  loadAssignmentsFor,
  localityKey,
  serverListenerFor,
  type XdsConfig,
} from './translate.ts';
export {
  CLUSTER_TYPE,
  ENDPOINT_TYPE,
  LISTENER_TYPE,
  ROUTE_TYPE,
  XDS_TYPES,
  RESOURCE_PROTO_FILES,
  CERT_PROVIDER_INSTANCE,
  SERVER_LISTENER_PREFIX,
  SERVER_LISTENER_TEMPLATE,
  clusterName,
  listenerName,
  parseServerListenerName,
  serverListenerName,
  type XdsTypeUrl,
} from './names.ts';
export { parseDuration, type ProtoDuration } from './duration.ts';
export type { MeshTls, ProxyLocality, XdsFinding, XdsInput, XdsResource } from './types.ts';
