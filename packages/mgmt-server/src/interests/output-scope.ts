// Interest-scoped outputs (DESIGN §17): which VirtualDestinations a cluster's output carries.
// Pure: a function of the unscoped output and the hosts the cluster holds leases on.

import {
  SOURCES_ANNOTATION,
  buildOutputSnapshot,
  withProvenance,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';

const VD_PREFIX = 'VirtualDestination/';
const CLUSTER_LABEL = 'topology.istio.io/cluster';
/** The outputs a VirtualDestination owns: they go when the cluster has no interest in it. */
const SCOPED_KINDS = new Set(['ServiceEntry', 'DestinationRule']);
/** Routes to VirtualDestinations: they go when the cluster has no interest in any destination they name. */
const ROUTE_KIND = 'VirtualService';
const ROUTE_TABLE_PREFIX = 'RouteTable/';

/** Why a cluster receives a VirtualDestination (the first that applies). */
export type InterestReason = 'defined-here' | 'backends-here' | 'routed-here' | 'lease' | 'none';

export interface DestinationScope {
  /** The VirtualDestination's source id, `VirtualDestination/namespace/name@cluster`. */
  readonly destination: string;
  /** Its hosts in this cluster's output (ServiceEntry hosts). */
  readonly hosts: readonly string[];
  readonly reason: InterestReason;
}

export interface ScopedOutput {
  readonly output: OutputSnapshot;
  /** Every VirtualDestination the unscoped output carried, sorted by id; reason `none` = left out. */
  readonly destinations: readonly DestinationScope[];
}

function sourcesOf(r: Resource): readonly string[] {
  const value = r.metadata.annotations?.[SOURCES_ANNOTATION];
  return value === undefined || value === '' ? [] : value.split(',');
}

function isScopedKind(r: Resource): boolean {
  return SCOPED_KINDS.has(r.kind) && r.apiVersion.startsWith('networking.istio.io/');
}

function isRoute(r: Resource): boolean {
  return r.kind === ROUTE_KIND && r.apiVersion.startsWith('networking.istio.io/');
}

/**
 * Whether the output stays: a destination's ServiceEntry or DestinationRule while its destination
 * is kept; a route naming destinations while one of them is kept; everything else always (security
 * outputs are never scoped).
 */
function keeps(r: Resource, dropped: ReadonlySet<string>): boolean {
  const named = resourceFactsOf(r).destinations;
  if (isScopedKind(r)) return !named.some((s) => dropped.has(s));
  if (!isRoute(r)) return true;
  return named.length === 0 || named.some((s) => !dropped.has(s));
}

interface DestinationFacts {
  hosts: Set<string>;
  backendsHere: boolean;
  routedHere: boolean;
}

/** What one output says, once per output object (outputs are frozen and reused from run to run). */
interface ResourceFacts {
  /** The VirtualDestinations among its sources. */
  readonly destinations: readonly string[];
  /** Clusters whose RouteTables are among its sources. */
  readonly routeTableClusters: ReadonlySet<string>;
  /** A ServiceEntry's hosts (lower case). */
  readonly hosts: readonly string[];
  /** The `topology.istio.io/cluster` labels of a ServiceEntry's endpoints. */
  readonly endpointClusters: ReadonlySet<string>;
}

const resourceFacts = new WeakMap<Resource, ResourceFacts>();

function resourceFactsOf(r: Resource): ResourceFacts {
  let facts = resourceFacts.get(r);
  if (facts !== undefined) return facts;
  const sources = sourcesOf(r);
  const spec = (r.spec ?? {}) as { hosts?: unknown; endpoints?: readonly { labels?: Record<string, string> }[] };
  const entry = r.kind === 'ServiceEntry' && isScopedKind(r);
  facts = {
    destinations: sources.filter((s) => s.startsWith(VD_PREFIX)),
    routeTableClusters: new Set(
      sources.filter((s) => s.startsWith(ROUTE_TABLE_PREFIX)).map((s) => s.slice(s.lastIndexOf('@') + 1)),
    ),
    hosts:
      entry && Array.isArray(spec.hosts)
        ? spec.hosts.filter((h): h is string => typeof h === 'string').map((h) => h.toLowerCase())
        : [],
    endpointClusters: new Set(
      entry ? (spec.endpoints ?? []).map((e) => e.labels?.[CLUSTER_LABEL]).filter((c) => c !== undefined) : [],
    ),
  };
  if (Object.isFrozen(r)) resourceFacts.set(r, facts);
  return facts;
}

/** What the output says of each VirtualDestination: its hosts, whether it has backends or routes here. */
function factsOf(cluster: string, resources: readonly Resource[]): Map<string, DestinationFacts> {
  const facts = new Map<string, DestinationFacts>();
  const of = (id: string): DestinationFacts => {
    let f = facts.get(id);
    if (f === undefined) {
      f = { hosts: new Set(), backendsHere: false, routedHere: false };
      facts.set(id, f);
    }
    return f;
  };
  for (const r of resources) {
    const rf = resourceFactsOf(r);
    if (rf.destinations.length === 0) continue;
    // A RouteTable defined in this cluster that routes to the destination declares an interest;
    // one defined elsewhere reaches every cluster of its workspace and says nothing about callers.
    const routedHere = rf.routeTableClusters.has(cluster);
    for (const id of rf.destinations) {
      const f = of(id);
      if (!isScopedKind(r)) {
        if (routedHere) f.routedHere = true;
        continue;
      }
      for (const h of rf.hosts) f.hosts.add(h);
      if (rf.endpointClusters.has(cluster)) f.backendsHere = true;
    }
  }
  return facts;
}

function reasonFor(id: string, cluster: string, f: DestinationFacts, held: ReadonlySet<string>): InterestReason {
  if (id.endsWith(`@${cluster}`)) return 'defined-here';
  if (f.backendsHere) return 'backends-here';
  if (f.routedHere) return 'routed-here';
  for (const host of f.hosts) if (held.has(host)) return 'lease';
  return 'none';
}

/**
 * The output `cluster` receives when it holds leases on `held` hosts: every resource of the
 * unscoped output except the ServiceEntries and DestinationRules of VirtualDestinations the
 * cluster has no interest in, and the VirtualServices that route only to such destinations.
 * Declared interest needs no lease: the destination is defined in this cluster, has backends here
 * (an endpoint labelled with this cluster), or a RouteTable defined here routes to it.
 * `previous` (the last scoped output of the cluster) lets the hash resume where they differ.
 */
export function scopeOutput(
  output: OutputSnapshot,
  held: ReadonlySet<string>,
  previous?: OutputSnapshot,
): ScopedOutput {
  const facts = factsOf(output.cluster, output.resources);
  const destinations: DestinationScope[] = [...facts]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, f]) => ({
      destination: id,
      hosts: [...f.hosts].sort(),
      reason: reasonFor(id, output.cluster, f, held),
    }));
  const dropped = new Set(destinations.filter((d) => d.reason === 'none').map((d) => d.destination));
  if (dropped.size === 0) return { output, destinations };
  const kept = output.resources.filter((r) => keeps(r, dropped));
  const scoped = buildOutputSnapshot(
    { cluster: output.cluster, resources: kept, provenance: output.provenance },
    previous,
  );
  return { output: scoped, destinations };
}

/**
 * `scopeOutput` with memory per cluster: the same unscoped resources and the same held hosts
 * give the previous result again (an interest change redoes only its cluster; a change of one
 * cluster's output redoes only that cluster).
 */
/**
 * Whether the scoped output of `before`'s cluster stays the same when its unscoped resources become
 * `after`: every resource that came or went is an output scoping leaves out (a ServiceEntry,
 * DestinationRule or route of left-out destinations only) and cannot make one of them interesting
 * (no backend of this cluster, no RouteTable defined here, no held host). Resources are compared
 * by identity: the translator hands unchanged outputs back as the same objects.
 */
function onlyLeftOutChanged(
  cluster: string,
  before: readonly Resource[],
  after: readonly Resource[],
  result: ScopedOutput,
  held: ReadonlySet<string>,
): boolean {
  const dropped = new Set(result.destinations.filter((d) => d.reason === 'none').map((d) => d.destination));
  if (dropped.size === 0) return false;
  const leftOut = (r: Resource): boolean => {
    if (!isScopedKind(r) && !isRoute(r)) return false;
    const facts = resourceFactsOf(r);
    const ids = facts.destinations;
    if (ids.length === 0 || !ids.every((id) => dropped.has(id))) return false;
    if (facts.routeTableClusters.has(cluster)) return false;
    return !facts.endpointClusters.has(cluster) && !facts.hosts.some((h) => held.has(h));
  };
  const was = new Set(before);
  const is = new Set(after);
  for (const r of after) if (!was.has(r) && !leftOut(r)) return false;
  for (const r of before) if (!is.has(r) && !leftOut(r)) return false;
  return true;
}

export class OutputScoper {
  readonly #last = new Map<
    string,
    { resources: readonly Resource[]; provenance: OutputSnapshot['provenance']; heldKey: string; result: ScopedOutput }
  >();

  scope(output: OutputSnapshot, held: ReadonlySet<string>): ScopedOutput {
    const heldKey = [...held].sort().join(',');
    const last = this.#last.get(output.cluster);
    let result: ScopedOutput;
    if (last !== undefined && last.resources === output.resources && last.heldKey === heldKey) {
      if (last.provenance === output.provenance) return last.result;
      // Same content, another provenance (a contribution turned stale or fresh): no new hash.
      const kept = last.result.output;
      result = {
        ...last.result,
        output: kept.resources === output.resources ? output : withProvenance(kept, output.provenance),
      };
    } else if (
      last !== undefined &&
      last.heldKey === heldKey &&
      onlyLeftOutChanged(output.cluster, last.resources, output.resources, last.result, held)
    ) {
      // The change is all in what this cluster does not receive: the scoped output stays.
      result = { ...last.result, output: withProvenance(last.result.output, output.provenance) };
    } else {
      result = scopeOutput(output, held, last?.result.output);
    }
    this.#last.set(output.cluster, { resources: output.resources, provenance: output.provenance, heldKey, result });
    return result;
  }

  /** The last scoping of every cluster (for the interests view). */
  all(): ReadonlyMap<string, ScopedOutput> {
    return new Map([...this.#last].map(([cluster, l]) => [cluster, l.result]));
  }

  forget(cluster: string): void {
    this.#last.delete(cluster);
  }
}
