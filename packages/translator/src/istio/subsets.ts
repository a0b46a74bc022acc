/**
 * Destination subsets. A route destination with `subset` labels, or a `ref.cluster` (which
 * becomes the subset label topology.istio.io/cluster), routes to a named DestinationRule
 * subset. The subsets each destination needs are collected from every RouteTable, so the
 * DestinationRule of a VirtualDestination (or of a Service) lists them in every cluster.
 */
import { createHash } from 'node:crypto';
import { KINDS, type Resource } from '@meshrelay/api';
import { objectKey } from '../gloo/cluster-index.ts';
import type { DestinationReference, RouteTableSpec, StringMap } from '../gloo/gloo-types.ts';
import { describeOwned, type Owned } from '../gloo/inventory.ts';
import { outputMetadata, outputName } from './names.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { CLUSTER_LABEL } from '../gloo/virtual-destinations.ts';

/** The labels a destination reference selects its endpoints by (empty: the whole destination). */
export function subsetLabels(ref: DestinationReference): Record<string, string> {
  const labels: Record<string, string> = { ...(ref.subset ?? {}) };
  if (ref.ref.cluster !== undefined && ref.ref.cluster !== '') labels[CLUSTER_LABEL] = ref.ref.cluster;
  return labels;
}

/** A deterministic DNS-label subset name from its labels, e.g. `version-v2`. */
export function subsetName(labels: StringMap): string {
  const full = Object.keys(labels)
    .sort()
    .map((k) => `${k}-${labels[k] ?? ''}`)
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  if (full.length > 0 && full.length <= 63) return full;
  const digest = createHash('sha256')
    .update(JSON.stringify(Object.entries(labels).sort()))
    .digest('hex')
    .slice(0, 10);
  return `${full.slice(0, 52).replace(/-+$/, '')}-${digest}`.replace(/^-/, '');
}

export interface SubsetDemand {
  /** Subset name -> labels. */
  readonly subsets: Map<string, StringMap>;
  /** Route tables that asked for them. */
  readonly sources: Set<string>;
}

/** What every destination needs, keyed `VIRTUAL_DESTINATION:ns/name` or `SERVICE:ns/name`. */
export type SubsetDemands = ReadonlyMap<string, SubsetDemand>;

export function demandKey(kind: 'VIRTUAL_DESTINATION' | 'SERVICE', namespace: string, name: string): string {
  return `${kind}:${objectKey(namespace, name)}`;
}

function refsOf(rt: Owned<RouteTableSpec>): DestinationReference[] {
  const fromRoutes = (rt.spec.http ?? []).flatMap((r) => r.forwardTo?.destinations ?? []);
  return rt.spec.defaultDestination ? [...fromRoutes, rt.spec.defaultDestination] : fromRoutes;
}

/** Collects the subsets every RouteTable's destinations need. */
export function collectSubsets(routeTables: readonly Owned<RouteTableSpec>[], problems: ProblemSink): SubsetDemands {
  const demands = new Map<string, SubsetDemand>();
  for (const rt of routeTables) {
    for (const ref of refsOf(rt)) {
      const labels = subsetLabels(ref);
      if (Object.keys(labels).length === 0) continue;
      const kind = ref.kind ?? 'SERVICE';
      if (kind === 'EXTERNAL_SERVICE') {
        problems.add({
          cluster: rt.cluster,
          resource: describeOwned(rt),
          reason: `a subset of ExternalService ${ref.ref.name} is not supported by Meshrelay; the whole service is used`,
        });
        continue;
      }
      const key = demandKey(kind, ref.ref.namespace ?? rt.namespace, ref.ref.name);
      const demand = demands.get(key) ?? { subsets: new Map(), sources: new Set() };
      demand.subsets.set(subsetName(labels), labels);
      demand.sources.add(rt.source);
      demands.set(key, demand);
    }
  }
  return demands;
}

/** DestinationRule `subsets` for a demand, sorted by name. */
export function subsetList(demand: SubsetDemand | undefined): Record<string, unknown>[] {
  if (!demand) return [];
  return [...demand.subsets.keys()]
    .sort()
    .map((name) => ({ name, labels: { ...(demand.subsets.get(name) as StringMap) } }));
}

/** The union of label keys the subsets of a demand select by (what gateway endpoints must keep). */
export function subsetKeys(demand: SubsetDemand | undefined): string[] {
  if (!demand) return [];
  return [...new Set([...demand.subsets.values()].flatMap((labels) => Object.keys(labels)))].sort();
}

/**
 * The DestinationRule holding the subsets of a Service (`<name>-subsets` in its namespace) for one cluster's DNS
 * domain.
 */
export function buildServiceSubsetRule(
  namespace: string,
  name: string,
  clusterDomain: string,
  demand: SubsetDemand,
): Resource {
  return {
    apiVersion: KINDS.DestinationRule.apiVersion,
    kind: KINDS.DestinationRule.kind,
    metadata: outputMetadata(outputName(name, 'subsets'), namespace),
    spec: { host: `${name}.${namespace}.svc.${clusterDomain}`, subsets: subsetList(demand) },
  };
}
