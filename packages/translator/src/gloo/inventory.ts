/**
 * The Gloo resources of all admitted clusters, validated and de-duplicated. A name belongs to
 * a workspace: a VirtualDestination, RouteTable or policy is identified by its workspace and
 * kind/namespace/name, so another workspace defining the same name never replaces it. Two
 * clusters of one workspace defining the same name clash: the copy from the lexicographically
 * first cluster is used and both are reported, each naming the other.
 */
import { KINDS, formatResourceKey, isKind, resourceKey, type KindRef, type Resource } from '@meshrelay/api';
import type {
  AccessPolicySpec,
  CorsPolicySpec,
  ExternalEndpointSpec,
  ExternalServiceSpec,
  FailoverPolicySpec,
  FaultInjectionPolicySpec,
  HeaderManipulationPolicySpec,
  MirrorPolicySpec,
  OutlierDetectionPolicySpec,
  LoadBalancerPolicySpec,
  RetryTimeoutPolicySpec,
  RouteTableSpec,
  VirtualDestinationSpec,
  VirtualGatewaySpec,
} from './gloo-types.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { sourceId } from '../engine/sources.ts';

/** A Gloo resource with the cluster it was found in and its (validated) spec. */
export interface Owned<T> {
  /** `Kind/namespace/name@cluster` (see engine/sources.ts). */
  readonly source: string;
  /** The workspace owning its cluster and namespace ('' = the implicit one). */
  readonly workspace: string;
  readonly cluster: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly resource: Resource;
  readonly spec: T;
}

export interface Inventory {
  /** The cluster whose definition is used, by `nameOwnerKey`: pass back as `previousNameOwners`. */
  readonly owners: ReadonlyMap<string, string>;
  readonly virtualDestinations: readonly Owned<VirtualDestinationSpec>[];
  readonly routeTables: readonly Owned<RouteTableSpec>[];
  readonly accessPolicies: readonly Owned<AccessPolicySpec>[];
  readonly failoverPolicies: readonly Owned<FailoverPolicySpec>[];
  readonly outlierDetectionPolicies: readonly Owned<OutlierDetectionPolicySpec>[];
  readonly loadBalancerPolicies: readonly Owned<LoadBalancerPolicySpec>[];
  readonly retryTimeoutPolicies: readonly Owned<RetryTimeoutPolicySpec>[];
  readonly faultInjectionPolicies: readonly Owned<FaultInjectionPolicySpec>[];
  readonly headerManipulationPolicies: readonly Owned<HeaderManipulationPolicySpec>[];
  readonly corsPolicies: readonly Owned<CorsPolicySpec>[];
  readonly mirrorPolicies: readonly Owned<MirrorPolicySpec>[];
  readonly externalServices: readonly Owned<ExternalServiceSpec>[];
  readonly externalEndpoints: readonly Owned<ExternalEndpointSpec>[];
  readonly virtualGateways: readonly Owned<VirtualGatewaySpec>[];
}

const GLOO_KINDS: readonly KindRef[] = [
  KINDS.VirtualDestination,
  KINDS.RouteTable,
  KINDS.AccessPolicy,
  KINDS.FailoverPolicy,
  KINDS.OutlierDetectionPolicy,
  KINDS.LoadBalancerPolicy,
  KINDS.RetryTimeoutPolicy,
  KINDS.FaultInjectionPolicy,
  KINDS.HeaderManipulationPolicy,
  KINDS.CORSPolicy,
  KINDS.MirrorPolicy,
  KINDS.ExternalService,
  KINDS.ExternalEndpoint,
  KINDS.VirtualGateway,
];

export function isGlooKind(r: Resource): boolean {
  return GLOO_KINDS.some((k) => isKind(r, k));
}

function compareOwned(a: Owned<unknown>, b: Owned<unknown>): number {
  return a.namespace < b.namespace
    ? -1
    : a.namespace > b.namespace
      ? 1
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : a.cluster < b.cluster
            ? -1
            : a.cluster > b.cluster
              ? 1
              : 0;
}

/** A clash inside one workspace, on both resources: the one used gets a WARNING, the other is INVALID. */
function reportClash(first: Owned<unknown>, cluster: string, r: Resource, problems: ProblemSink): void {
  const where = first.workspace === '' ? '' : ` of workspace ${first.workspace}`;
  problems.add({
    cluster,
    resource: formatResourceKey(resourceKey(r)),
    reason: `also defined in cluster ${first.cluster}${where}; the definition from ${first.cluster} is used`,
    approval: 'INVALID',
  });
  problems.add({
    cluster: first.cluster,
    resource: describeOwned(first),
    reason: `also defined in cluster ${cluster}${where}; this definition is used and the one from ${cluster} is ignored`,
  });
}

/** The key of a name in `Inventory.owners` / `previousOwners`: kind, workspace, namespace/name. */
export function nameOwnerKey(kind: string, workspace: string, namespace: string, name: string): string {
  return `${kind}\u0000${workspace}\u0000${namespace}/${name}`;
}

/**
 * Collects Gloo resources from `perCluster` (cluster name -> validated resources). When clusters
 * of one workspace define the same name, the cluster whose definition was used last time
 * (`previousOwners`) keeps it, so a newcomer never replaces what was emitted; otherwise the
 * first cluster by name is used. Clusters are visited in sorted order so the result does not
 * depend on map order.
 */
export function buildInventory(
  perCluster: ReadonlyMap<string, readonly Resource[]>,
  problems: ProblemSink,
  workspaceOf: (cluster: string, namespace: string) => string | undefined = () => '',
  previousOwners: ReadonlyMap<string, string> = new Map(),
): Inventory {
  const defined = new Map<KindRef, Map<string, Owned<unknown>[]>>(GLOO_KINDS.map((k) => [k, new Map()]));
  for (const cluster of [...perCluster.keys()].sort()) {
    for (const r of perCluster.get(cluster) ?? []) {
      const ref = GLOO_KINDS.find((k) => isKind(r, k));
      if (!ref) continue;
      const namespace = r.metadata.namespace ?? '';
      const workspace = workspaceOf(cluster, namespace) ?? '';
      const id = nameOwnerKey(ref.kind, workspace, namespace, r.metadata.name);
      const seen = defined.get(ref) as Map<string, Owned<unknown>[]>;
      const list = seen.get(id) ?? [];
      list.push({
        source: sourceId(r, cluster),
        workspace,
        cluster,
        namespace,
        name: r.metadata.name,
        labels: r.metadata.labels ?? {},
        resource: r,
        spec: r.spec,
      });
      seen.set(id, list);
    }
  }
  const owners = new Map<string, string>();
  const byKind = new Map<KindRef, Map<string, Owned<unknown>>>();
  for (const [ref, seen] of defined) {
    const used = new Map<string, Owned<unknown>>();
    for (const [id, list] of seen) {
      const previous = previousOwners.get(id);
      const winner = list.find((o) => o.cluster === previous) ?? (list[0] as Owned<unknown>);
      for (const other of list) if (other !== winner) reportClash(winner, other.cluster, other.resource, problems);
      used.set(id, winner);
      owners.set(id, winner.cluster);
    }
    byKind.set(ref, used);
  }
  const sorted = <T>(ref: KindRef): Owned<T>[] =>
    [...(byKind.get(ref) as Map<string, Owned<T>>).values()].sort(compareOwned);
  return {
    owners,
    virtualDestinations: sorted<VirtualDestinationSpec>(KINDS.VirtualDestination),
    routeTables: sorted<RouteTableSpec>(KINDS.RouteTable),
    accessPolicies: sorted<AccessPolicySpec>(KINDS.AccessPolicy),
    failoverPolicies: sorted<FailoverPolicySpec>(KINDS.FailoverPolicy),
    outlierDetectionPolicies: sorted<OutlierDetectionPolicySpec>(KINDS.OutlierDetectionPolicy),
    loadBalancerPolicies: sorted<LoadBalancerPolicySpec>(KINDS.LoadBalancerPolicy),
    retryTimeoutPolicies: sorted<RetryTimeoutPolicySpec>(KINDS.RetryTimeoutPolicy),
    faultInjectionPolicies: sorted<FaultInjectionPolicySpec>(KINDS.FaultInjectionPolicy),
    headerManipulationPolicies: sorted<HeaderManipulationPolicySpec>(KINDS.HeaderManipulationPolicy),
    corsPolicies: sorted<CorsPolicySpec>(KINDS.CORSPolicy),
    mirrorPolicies: sorted<MirrorPolicySpec>(KINDS.MirrorPolicy),
    externalServices: sorted<ExternalServiceSpec>(KINDS.ExternalService),
    externalEndpoints: sorted<ExternalEndpointSpec>(KINDS.ExternalEndpoint),
    virtualGateways: sorted<VirtualGatewaySpec>(KINDS.VirtualGateway),
  };
}

/** "Kind.apiVersion namespace/name" of a Gloo resource, for problems. */
export function describeOwned(owned: Owned<unknown>): string {
  return formatResourceKey(resourceKey(owned.resource));
}
