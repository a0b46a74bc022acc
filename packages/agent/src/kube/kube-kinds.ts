import { KINDS, type KindRef } from '@meshrelay/api';

/** A kind as the Kubernetes API serves it: its apiVersion/kind plus the resource (plural) name in URLs. */
export interface KubeKind {
  readonly ref: KindRef;
  readonly plural: string;
}

function kubeKind(ref: KindRef, plural: string): KubeKind {
  return Object.freeze({ ref, plural });
}

/**
 * What the kubernetes discovery provider watches: the core objects the
 * translator reads (EndpointSlices, not the legacy Endpoints they mirror) and
 * the Gloo kinds. Nodes carry the locality of the Pods scheduled on them.
 */
export const WATCHED_KINDS: readonly KubeKind[] = [
  kubeKind(KINDS.Service, 'services'),
  kubeKind(KINDS.EndpointSlice, 'endpointslices'),
  kubeKind(KINDS.Pod, 'pods'),
  kubeKind(KINDS.Node, 'nodes'),
  kubeKind(KINDS.VirtualDestination, 'virtualdestinations'),
  kubeKind(KINDS.RouteTable, 'routetables'),
  kubeKind(KINDS.AccessPolicy, 'accesspolicies'),
  kubeKind(KINDS.FailoverPolicy, 'failoverpolicies'),
  kubeKind(KINDS.OutlierDetectionPolicy, 'outlierdetectionpolicies'),
  kubeKind(KINDS.RetryTimeoutPolicy, 'retrytimeoutpolicies'),
  kubeKind(KINDS.FaultInjectionPolicy, 'faultinjectionpolicies'),
  kubeKind(KINDS.HeaderManipulationPolicy, 'headermanipulationpolicies'),
  kubeKind(KINDS.LoadBalancerPolicy, 'loadbalancerpolicies'),
  kubeKind(KINDS.MirrorPolicy, 'mirrorpolicies'),
  kubeKind(KINDS.CORSPolicy, 'corspolicies'),
  kubeKind(KINDS.ExternalService, 'externalservices'),
  kubeKind(KINDS.ExternalEndpoint, 'externalendpoints'),
  kubeKind(KINDS.VirtualGateway, 'virtualgateways'),
  kubeKind(KINDS.WorkspaceSettings, 'workspacesettings'),
];

/**
 * ConfigMaps, watched in the Istio namespace only, for Istio's mesh config (the trust domain):
 * not in WATCHED_KINDS, which would read every ConfigMap of every watched namespace.
 */
export const MESH_CONFIG_KIND: KubeKind = kubeKind(KINDS.ConfigMap, 'configmaps');

/** What the kubernetes applier writes (and may prune): the Istio kinds of output snapshots. */
export const APPLIED_KINDS: readonly KubeKind[] = [
  kubeKind(KINDS.ServiceEntry, 'serviceentries'),
  kubeKind(KINDS.DestinationRule, 'destinationrules'),
  kubeKind(KINDS.VirtualService, 'virtualservices'),
  kubeKind(KINDS.AuthorizationPolicy, 'authorizationpolicies'),
  kubeKind(KINDS.PeerAuthentication, 'peerauthentications'),
  kubeKind(KINDS.Gateway, 'gateways'),
  kubeKind(KINDS.WorkloadEntry, 'workloadentries'),
];

export function findAppliedKind(apiVersion: string, kind: string): KubeKind | undefined {
  return APPLIED_KINDS.find((k) => k.ref.apiVersion === apiVersion && k.ref.kind === kind);
}

/** `/api/v1` for the core group, `/apis/<group>/<version>` otherwise. */
function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The collection URL path: all namespaces when `namespace` is undefined (and always for a cluster-scoped kind). */
export function collectionPath(kind: KubeKind, namespace?: string): string {
  const scope = kind.ref.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${groupVersionPath(kind.ref.apiVersion)}${scope}/${kind.plural}`;
}

/** The URL path of one object. */
export function objectPath(kind: KubeKind, namespace: string | undefined, name: string): string {
  return `${collectionPath(kind, kind.ref.namespaced ? (namespace ?? '') : undefined)}/${encodeURIComponent(name)}`;
}
