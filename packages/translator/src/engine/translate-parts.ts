/** The translation stages that are the same for a one-shot and an incremental translation. */
import { KINDS, isKind, type Resource } from '@meshrelay/api';
import {
  buildAuthorizationPolicies,
  buildPeerAuthentications,
  type AccessContext,
} from '../istio/authorization-policy.ts';
import type { ClusterIndex } from '../gloo/cluster-index.ts';
import { policiesFor } from '../istio/destination-policies.ts';
import { buildDestinationRules } from '../istio/destination-rule.ts';
import {
  buildExternalDestinationRules,
  buildExternalServiceEntry,
  buildWorkloadEntry,
} from '../istio/external-service.ts';
import { describeOwned, type Inventory, type Owned } from '../gloo/inventory.ts';
import { delegatedTables } from '../gloo/delegation.ts';
import type { RouteTableSpec } from '../gloo/gloo-types.ts';
import type { ProblemSink } from './problems.ts';
import type { ClusterContext } from '../istio/service-entry.ts';
import type { Selectable } from '../gloo/selectors.ts';
import { sourceId, sourced, type Sourced } from './sources.ts';
import type { WorkspaceModel, WorkspaceSettingsSpec } from '../workspaces/workspaces.ts';
import { buildServiceSubsetRule, demandKey, subsetList, type SubsetDemands } from '../istio/subsets.ts';
import type { ClusterInfo } from './types.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { semanticAddressesOf } from '../istio/policy-vips.ts';

const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';
/** Istio's default meshConfig.trustDomain. */
const DEFAULT_TRUST_DOMAIN = 'cluster.local';

/** A cluster's trust domain: the registry's, else its mesh config's, else Istio's default. */
export function clusterContext(
  name: string,
  info: ClusterInfo | undefined,
  index: ClusterIndex | undefined,
): ClusterContext {
  return {
    name,
    trustDomain: info?.trustDomain ?? index?.trustDomain ?? DEFAULT_TRUST_DOMAIN,
    network: info?.network ?? name,
    clusterDomain: info?.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
  };
}

/** Outputs that are the same for every consuming cluster; yields after each VirtualDestination and AccessPolicy. */
export function* sharedOutputs(
  inventory: Inventory,
  models: readonly VirtualDestinationModel[],
  demands: SubsetDemands,
  accessCtx: AccessContext,
  problems: ProblemSink,
  vips: ReadonlyMap<string, string> = new Map(),
): Generator<void, Sourced[]> {
  const out: Sourced[] = [];
  for (const vd of models) {
    const policies = policiesFor(
      vd,
      inventory.failoverPolicies,
      inventory.outlierDetectionPolicies,
      inventory.loadBalancerPolicies,
      problems,
    );
    const demand = demands.get(demandKey('VIRTUAL_DESTINATION', vd.owned.namespace, vd.owned.name));
    for (const dr of buildDestinationRules(vd, policies, subsetList(demand), semanticAddressesOf(vd, vips))) {
      out.push(
        sourced(
          dr,
          vd.owned.source,
          policies.failover?.source,
          policies.outlierDetection?.source,
          policies.loadBalancer?.source,
          ...(demand?.sources ?? []),
        ),
      );
    }
    yield;
  }
  for (const p of inventory.accessPolicies) {
    for (const built of [...buildAuthorizationPolicies(p, accessCtx), ...buildPeerAuthentications(p, accessCtx)])
      out.push(sourced(built, p.source));
    yield;
  }
  for (const es of inventory.externalServices) {
    const entry = buildExternalServiceEntry(es, inventory.externalEndpoints);
    out.push(
      sourced(entry.resource, es.source, ...entry.endpointSources),
      ...buildExternalDestinationRules(es).map((dr) => sourced(dr, es.source)),
    );
  }
  out.push(...inventory.externalEndpoints.map((ee) => sourced(buildWorkloadEntry(ee), ee.source)));
  return out;
}

/** A route table without hosts that no route delegates to produces nothing: say so. */
export function reportOrphanRouteTables(routeTables: readonly Owned<RouteTableSpec>[], problems: ProblemSink): void {
  const delegated = new Set(
    routeTables.flatMap((parent) =>
      (parent.spec.http ?? []).flatMap((route) =>
        route.delegate ? delegatedTables(parent, route.delegate, routeTables) : [],
      ),
    ),
  );
  for (const rt of routeTables) {
    if ((rt.spec.hosts ?? []).length > 0 || delegated.has(rt)) continue;
    problems.add({
      cluster: rt.cluster,
      resource: describeOwned(rt),
      reason: 'has no hosts and no route table delegates to it: nothing is produced',
    });
  }
}

/** The DestinationRules holding the subsets route tables ask of plain Services, for one consumer. */
export function serviceSubsetRules(demands: SubsetDemands, consumer: ClusterContext): Sourced[] {
  return [...demands]
    .filter(([key]) => key.startsWith('SERVICE:'))
    .map(([key, demand]) => {
      const [namespace, name] = key.slice('SERVICE:'.length).split('/') as [string, string];
      const [owner, ...rest] = [...demand.sources].sort() as [string, ...string[]];
      return sourced(buildServiceSubsetRule(namespace, name, consumer.clusterDomain, demand), owner, ...rest);
    });
}

/** The WorkspaceSettings of the admitted inputs, as owned resources (their workspace is what the model decides). */
export function workspaceSettings(
  perCluster: ReadonlyMap<string, readonly Resource[]>,
): Owned<WorkspaceSettingsSpec>[] {
  return [...perCluster].flatMap(([cluster, resources]) =>
    resources
      .filter((r) => isKind(r, KINDS.WorkspaceSettings))
      .map((r) => ({
        source: sourceId(r, cluster),
        workspace: '',
        cluster,
        namespace: r.metadata.namespace ?? '',
        name: r.metadata.name,
        labels: r.metadata.labels ?? {},
        resource: r,
        spec: (r.spec ?? {}) as WorkspaceSettingsSpec,
      })),
  );
}

/** Owner workspace and identity of every Gloo resource of the inventory, by source id. */
export function sourceOwners(
  inventory: Inventory,
  settings: readonly Owned<WorkspaceSettingsSpec>[],
  model: WorkspaceModel,
): { workspaces: Map<string, string>; objects: Map<string, Selectable> } {
  const all: Owned<unknown>[] = [...Object.values(inventory).flat(), ...settings];
  return {
    workspaces: new Map(all.map((o) => [o.source, model.workspaceOf(o.cluster, o.namespace) ?? ''])),
    objects: new Map(
      all.map((o) => [o.source, { name: o.name, namespace: o.namespace, cluster: o.cluster, labels: o.labels }]),
    ),
  };
}
