/**
 * A route destination on a Service in a named cluster (`ref.cluster`). In the relay model a
 * cluster's Istio knows only its own endpoints (Istio labels every endpoint of a host with the
 * cluster it runs in), so a subset on `topology.istio.io/cluster` of another cluster matches
 * nothing. Such a destination instead routes to a host of its own,
 * `<name>.<namespace>.svc.<cluster>.global`, built as an implicit VirtualDestination backed
 * by that one cluster's Service, so its ServiceEntry carries that cluster's endpoints.
 */
import type { ClusterIndex } from '../gloo/cluster-index.ts';
import { objectKey } from '../gloo/cluster-index.ts';
import { protocolOf } from '../workspaces/federation.ts';
import type { DestinationReference, RouteTableSpec, StringMap, VirtualDestinationSpec } from '../gloo/gloo-types.ts';
import type { Owned } from '../gloo/inventory.ts';
import { demandKey, subsetName, type SubsetDemand } from './subsets.ts';

/** The host a Service of one named cluster is reached by from other clusters. */
export function clusterServiceHost(name: string, namespace: string, cluster: string): string {
  return `${name}.${namespace}.svc.${cluster}.global`;
}

/** The implicit VirtualDestination's name; `-in-` keeps it apart from user-named ones. */
export function clusterDestinationName(name: string, cluster: string): string {
  return `${name}-in-${cluster}`;
}

/** Whether `ref` names a Service in a cluster other than `consumer` (so needs its own host there). */
export function isRemoteServiceRef(ref: DestinationReference, consumer: string): boolean {
  const cluster = ref.ref.cluster;
  return (ref.kind ?? 'SERVICE') === 'SERVICE' && cluster !== undefined && cluster !== '' && cluster !== consumer;
}

function clusterRefs(rt: Owned<RouteTableSpec>): DestinationReference[] {
  const refs = (rt.spec.http ?? []).flatMap((r) => r.forwardTo?.destinations ?? []);
  if (rt.spec.defaultDestination) refs.push(rt.spec.defaultDestination);
  return refs.filter(
    (ref) => (ref.kind ?? 'SERVICE') === 'SERVICE' && ref.ref.cluster !== undefined && ref.ref.cluster !== '',
  );
}

/**
 * The implicit VirtualDestinations of every `ref.cluster` Service destination, owned by the first route table naming
 * each.
 */
export function clusterDestinations(
  routeTables: readonly Owned<RouteTableSpec>[],
  indexes: readonly ClusterIndex[],
): Owned<VirtualDestinationSpec>[] {
  const byKey = new Map<string, Owned<VirtualDestinationSpec>>();
  for (const rt of routeTables) {
    for (const ref of clusterRefs(rt)) {
      const cluster = ref.ref.cluster as string;
      const namespace = ref.ref.namespace ?? rt.namespace;
      const name = clusterDestinationName(ref.ref.name, cluster);
      const key = objectKey(namespace, name);
      const service = indexes.find((i) => i.cluster === cluster)?.serviceByKey.get(objectKey(namespace, ref.ref.name));
      const ports = (service?.ports ?? []).filter((p) => p.port > 0);
      if (byKey.has(key) || ports.length === 0) continue;
      byKey.set(key, {
        source: rt.source,
        workspace: rt.workspace,
        cluster: rt.cluster,
        namespace,
        name,
        labels: {},
        resource: rt.resource,
        spec: {
          hosts: [clusterServiceHost(ref.ref.name, namespace, cluster)],
          services: [{ name: ref.ref.name, namespace, cluster }],
          ports: ports.map((p) => ({ number: p.port, protocol: protocolOf(p) })),
        },
      });
    }
  }
  return [...byKey.keys()].sort().map((k) => byKey.get(k) as Owned<VirtualDestinationSpec>);
}

/**
 * The subsets (`ref.subset` alone: the host already holds only that cluster) each implicit VirtualDestination needs.
 */
export function clusterDestinationDemands(routeTables: readonly Owned<RouteTableSpec>[]): Map<string, SubsetDemand> {
  const demands = new Map<string, SubsetDemand>();
  for (const rt of routeTables) {
    for (const ref of clusterRefs(rt)) {
      const labels: StringMap = { ...(ref.subset ?? {}) };
      if (Object.keys(labels).length === 0) continue;
      const key = demandKey(
        'VIRTUAL_DESTINATION',
        ref.ref.namespace ?? rt.namespace,
        clusterDestinationName(ref.ref.name, ref.ref.cluster as string),
      );
      const demand = demands.get(key) ?? { subsets: new Map(), sources: new Set() };
      demand.subsets.set(subsetName(labels), labels);
      demand.sources.add(rt.source);
      demands.set(key, demand);
    }
  }
  return demands;
}
