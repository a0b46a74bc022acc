// The resource types the fake kube-apiserver serves (see fake-kube-api-server.ts). A row says what
// the real API server would publish in discovery for that type: group/version, plural, kind,
// scope, and whether it has a `/status` subresource. `builtIn` marks types compiled into
// kube-apiserver (their list items carry no apiVersion/kind, and they allow updates without a
// resourceVersion); the others behave as custom resources.

/** One resource type served by the fake API server. */
export interface FakeKubeResourceType {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  /** Lower-case plural used in URLs, e.g. `kubernetesclusters`. */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** PUT/PATCH of the main resource ignore `.status`; `/status` changes only `.status`. */
  readonly statusSubresource: boolean;
  /** A kube-apiserver built-in type rather than a CustomResourceDefinition. */
  readonly builtIn: boolean;
}

function builtIn(
  group: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  status: boolean,
): FakeKubeResourceType {
  return { group, version: 'v1', plural, kind, namespaced, statusSubresource: status, builtIn: true };
}

function custom(group: string, version: string, plural: string, kind: string, status = true): FakeKubeResourceType {
  return { group, version, plural, kind, namespaced: true, statusSubresource: status, builtIn: false };
}

/** The default table; `startFakeKubeApiServer({ extraResourceTypes })` can add rows. */
export const FAKE_KUBE_RESOURCE_TYPES: readonly FakeKubeResourceType[] = [
  builtIn('', 'namespaces', 'Namespace', false, true),
  builtIn('', 'nodes', 'Node', false, true),
  builtIn('', 'services', 'Service', true, true),
  builtIn('', 'pods', 'Pod', true, true),
  builtIn('', 'secrets', 'Secret', true, false),
  builtIn('', 'configmaps', 'ConfigMap', true, false),
  builtIn('', 'endpoints', 'Endpoints', true, false),
  builtIn('', 'serviceaccounts', 'ServiceAccount', true, false),
  builtIn('discovery.k8s.io', 'endpointslices', 'EndpointSlice', true, false),
  builtIn('coordination.k8s.io', 'leases', 'Lease', true, false),
  custom('networking.istio.io', 'v1', 'serviceentries', 'ServiceEntry'),
  custom('networking.istio.io', 'v1', 'destinationrules', 'DestinationRule'),
  custom('networking.istio.io', 'v1', 'virtualservices', 'VirtualService'),
  custom('security.istio.io', 'v1', 'authorizationpolicies', 'AuthorizationPolicy'),
  custom('security.istio.io', 'v1', 'peerauthentications', 'PeerAuthentication'),
  custom('networking.istio.io', 'v1', 'gateways', 'Gateway'),
  custom('networking.istio.io', 'v1', 'workloadentries', 'WorkloadEntry'),
  custom('admin.gloo.solo.io', 'v2', 'kubernetesclusters', 'KubernetesCluster'),
  custom('networking.gloo.solo.io', 'v2', 'virtualdestinations', 'VirtualDestination'),
  custom('networking.gloo.solo.io', 'v2', 'routetables', 'RouteTable'),
  custom('security.policy.gloo.solo.io', 'v2', 'accesspolicies', 'AccessPolicy'),
  custom('resilience.policy.gloo.solo.io', 'v2', 'failoverpolicies', 'FailoverPolicy'),
  custom('resilience.policy.gloo.solo.io', 'v2', 'outlierdetectionpolicies', 'OutlierDetectionPolicy'),
  custom('resilience.policy.gloo.solo.io', 'v2', 'retrytimeoutpolicies', 'RetryTimeoutPolicy'),
  custom('resilience.policy.gloo.solo.io', 'v2', 'faultinjectionpolicies', 'FaultInjectionPolicy'),
  custom('trafficcontrol.policy.gloo.solo.io', 'v2', 'headermanipulationpolicies', 'HeaderManipulationPolicy'),
  custom('trafficcontrol.policy.gloo.solo.io', 'v2', 'loadbalancerpolicies', 'LoadBalancerPolicy'),
  custom('trafficcontrol.policy.gloo.solo.io', 'v2', 'mirrorpolicies', 'MirrorPolicy'),
  custom('security.policy.gloo.solo.io', 'v2', 'corspolicies', 'CORSPolicy'),
  custom('networking.gloo.solo.io', 'v2', 'externalservices', 'ExternalService'),
  custom('networking.gloo.solo.io', 'v2', 'externalendpoints', 'ExternalEndpoint'),
  custom('networking.gloo.solo.io', 'v2', 'virtualgateways', 'VirtualGateway'),
  custom('admin.gloo.solo.io', 'v2', 'workspacesettings', 'WorkspaceSettings'),
  custom('admin.gloo.solo.io', 'v2', 'workspaces', 'Workspace'),
  custom('admin.gloo.solo.io', 'v2', 'roottrustpolicies', 'RootTrustPolicy'),
];

/** `v1` or `group/version`, as in an object's apiVersion. */
export function apiVersionOf(type: FakeKubeResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

/** `plural` or `plural.group`, as kube-apiserver names a resource in error messages. */
export function qualifiedResourceOf(type: FakeKubeResourceType): string {
  return type.group === '' ? type.plural : `${type.plural}.${type.group}`;
}

/** Lookup over a table of types by URL coordinates or by kind. */
export class FakeKubeResourceTypeTable {
  readonly #types: readonly FakeKubeResourceType[];

  constructor(types: readonly FakeKubeResourceType[]) {
    this.#types = types;
  }

  all(): readonly FakeKubeResourceType[] {
    return this.#types;
  }

  /** The type served at `/api(s)/{group}/{version}/{plural}`, or undefined. */
  byPlural(group: string, version: string, plural: string): FakeKubeResourceType | undefined {
    return this.#types.find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  /** The types of one group/version (for discovery documents). */
  inGroupVersion(group: string, version: string): FakeKubeResourceType[] {
    return this.#types.filter((t) => t.group === group && t.version === version);
  }

  /**
   * Resolves a test's name for a type: a kind (`KubernetesCluster`), a plural (`kubernetesclusters`),
   * or `plural.group`. Throws when nothing or more than one type matches.
   */
  resolve(name: string): FakeKubeResourceType {
    const matches = this.#types.filter((t) => t.kind === name || t.plural === name || qualifiedResourceOf(t) === name);
    if (matches.length !== 1) {
      throw new Error(`fake kube-apiserver: resource type "${name}" matches ${matches.length} types`);
    }
    return matches[0]!;
  }

  /** The type of an object from its apiVersion and kind. */
  ofObject(apiVersion: string, kind: string): FakeKubeResourceType | undefined {
    return this.#types.find((t) => apiVersionOf(t) === apiVersion && t.kind === kind);
  }
}
