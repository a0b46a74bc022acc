/** Resource kinds Meshrelay reads (inputs) and writes (outputs), by apiVersion + kind. */
export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

function kind(apiVersion: string, name: string, namespaced = true): KindRef {
  return Object.freeze({ apiVersion, kind: name, namespaced });
}

export const KINDS = {
  Service: kind('v1', 'Service'),
  Endpoints: kind('v1', 'Endpoints'),
  EndpointSlice: kind('discovery.k8s.io/v1', 'EndpointSlice'),
  Pod: kind('v1', 'Pod'),
  Node: kind('v1', 'Node', false),
  ConfigMap: kind('v1', 'ConfigMap'),
  VirtualDestination: kind('networking.gloo.solo.io/v2', 'VirtualDestination'),
  RouteTable: kind('networking.gloo.solo.io/v2', 'RouteTable'),
  AccessPolicy: kind('security.policy.gloo.solo.io/v2', 'AccessPolicy'),
  FailoverPolicy: kind('resilience.policy.gloo.solo.io/v2', 'FailoverPolicy'),
  OutlierDetectionPolicy: kind('resilience.policy.gloo.solo.io/v2', 'OutlierDetectionPolicy'),
  RetryTimeoutPolicy: kind('resilience.policy.gloo.solo.io/v2', 'RetryTimeoutPolicy'),
  FaultInjectionPolicy: kind('resilience.policy.gloo.solo.io/v2', 'FaultInjectionPolicy'),
  HeaderManipulationPolicy: kind('trafficcontrol.policy.gloo.solo.io/v2', 'HeaderManipulationPolicy'),
  LoadBalancerPolicy: kind('trafficcontrol.policy.gloo.solo.io/v2', 'LoadBalancerPolicy'),
  MirrorPolicy: kind('trafficcontrol.policy.gloo.solo.io/v2', 'MirrorPolicy'),
  CORSPolicy: kind('security.policy.gloo.solo.io/v2', 'CORSPolicy'),
  ExternalService: kind('networking.gloo.solo.io/v2', 'ExternalService'),
  ExternalEndpoint: kind('networking.gloo.solo.io/v2', 'ExternalEndpoint'),
  VirtualGateway: kind('networking.gloo.solo.io/v2', 'VirtualGateway'),
  Workspace: kind('admin.gloo.solo.io/v2', 'Workspace'),
  WorkspaceSettings: kind('admin.gloo.solo.io/v2', 'WorkspaceSettings'),
  KubernetesCluster: kind('admin.gloo.solo.io/v2', 'KubernetesCluster'),
  ServiceEntry: kind('networking.istio.io/v1', 'ServiceEntry'),
  DestinationRule: kind('networking.istio.io/v1', 'DestinationRule'),
  VirtualService: kind('networking.istio.io/v1', 'VirtualService'),
  AuthorizationPolicy: kind('security.istio.io/v1', 'AuthorizationPolicy'),
  PeerAuthentication: kind('security.istio.io/v1', 'PeerAuthentication'),
  Gateway: kind('networking.istio.io/v1', 'Gateway'),
  WorkloadEntry: kind('networking.istio.io/v1', 'WorkloadEntry'),
} as const;

/** Kinds an agent may put into an input snapshot. */
export const INPUT_KINDS: readonly KindRef[] = [
  KINDS.Service,
  KINDS.Endpoints,
  KINDS.EndpointSlice,
  KINDS.Pod,
  KINDS.Node,
  KINDS.ConfigMap,
  KINDS.VirtualDestination,
  KINDS.RouteTable,
  KINDS.AccessPolicy,
  KINDS.FailoverPolicy,
  KINDS.OutlierDetectionPolicy,
  KINDS.RetryTimeoutPolicy,
  KINDS.FaultInjectionPolicy,
  KINDS.HeaderManipulationPolicy,
  KINDS.LoadBalancerPolicy,
  KINDS.MirrorPolicy,
  KINDS.CORSPolicy,
  KINDS.ExternalService,
  KINDS.ExternalEndpoint,
  KINDS.VirtualGateway,
  KINDS.Workspace,
  KINDS.WorkspaceSettings,
];

/**
 * The one ConfigMap an input carries: Istio's mesh config (`istio` or `istio-<revision>` in
 * `istio-system`), for the cluster's trust domain. Other ConfigMaps are not inputs.
 */
export const MESH_CONFIG_NAMESPACE = 'istio-system';
export function isMeshConfigMap(r: {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}): boolean {
  return (
    r.apiVersion === 'v1' &&
    r.kind === 'ConfigMap' &&
    r.metadata.namespace === MESH_CONFIG_NAMESPACE &&
    /^istio(-[a-z0-9-]+)?$/.test(r.metadata.name)
  );
}

export function findInputKind(apiVersion: string, kindName: string): KindRef | undefined {
  return INPUT_KINDS.find((k) => k.apiVersion === apiVersion && k.kind === kindName);
}

export function isKind(r: { apiVersion: string; kind: string }, ref: KindRef): boolean {
  return r.apiVersion === ref.apiVersion && r.kind === ref.kind;
}

/** Label put on every output resource so an applier prunes only what it owns. */
export const OWNER_LABEL = 'meshrelay.io/owned-by';
export const OWNER_LABEL_VALUE = 'meshrelay';
/**
 * Annotation on every output naming the Gloo resources it came from:
 * `Kind/namespace/name@cluster` ids, comma separated, sorted.
 */
export const SOURCES_ANNOTATION = 'meshrelay.io/sources';

/**
 * The lower-case plural a Kubernetes API serves a kind under by default (`AccessPolicy` →
 * `accesspolicies`, `RouteTable` → `routetables`), for kinds without a plural of their own.
 */
export function defaultPluralOf(kind: string): string {
  const k = kind.toLowerCase();
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  if (/(s|x|ch|sh)$/.test(k)) return `${k}es`;
  return `${k}s`;
}
