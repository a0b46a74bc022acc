/** The candidate outputs of one consuming cluster, and the deny-by-default outputs of security resources. */
import {
  KINDS,
  formatResourceKey,
  isKind,
  resourceEncoding,
  resourceKey,
  sha256Hex,
  type Resource,
} from '@meshrelay/api';
import type { SecurityResource } from '../gloo/admission.ts';
import type { AccessContext } from '../istio/authorization-policy.ts';
import type { ClusterIndex, EastWestGateway } from '../gloo/cluster-index.ts';
import type { Inventory, Owned } from '../gloo/inventory.ts';
import type { ProblemSink } from './problems.ts';
import type { RoutePolicySet } from '../istio/route-policy-fields.ts';
import type { RouteTableSpec } from '../gloo/gloo-types.ts';
import { denyByDefault } from '../istio/security-fallback.ts';
import { buildServiceEntry, type ClusterContext } from '../istio/service-entry.ts';
import { buildSemanticServiceEntries } from '../istio/semantic-entries.ts';
import { semanticAddressesKey, semanticAddressesOf, type SemanticAddresses } from '../istio/policy-vips.ts';
import { scopeKept, type ScopeDecisions } from './scope-memo.ts';
import type { Selectable } from '../gloo/selectors.ts';
import { sourced, type Sourced } from './sources.ts';
import { demandKey, subsetKeys, type SubsetDemands } from '../istio/subsets.ts';
import { serviceSubsetRules } from './translate-parts.ts';
import type { MemoRow, TranslationMemo } from './translation-memo.ts';
import type { TranslationInput } from './types.ts';
import { buildGateways } from '../istio/virtual-gateway.ts';
import { buildVirtualService, type RouteContext } from '../istio/virtual-service.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { isolationDeny, isolationOutputs, scopeCandidates, type ScopeCache } from '../workspaces/workspace-outputs.ts';
import type { WorkspaceModel, WorkspaceSettingsSpec } from '../workspaces/workspaces.ts';
import { groupByName, homeFirst, type ByName } from '../workspaces/workspace-names.ts';

export interface CandidateContext {
  readonly input: TranslationInput;
  readonly memo: TranslationMemo;
  readonly problems: ProblemSink;
  readonly inventory: Inventory;
  readonly models: readonly VirtualDestinationModel[];
  /** VirtualDestination models by `namespace/name` (one per workspace using the name). */
  readonly modelByKey: ByName<VirtualDestinationModel>;
  readonly demands: SubsetDemands;
  readonly settings: readonly Owned<WorkspaceSettingsSpec>[];
  readonly owners: ReadonlyMap<string, string>;
  readonly ownerObjects: ReadonlyMap<string, Selectable>;
  readonly model: WorkspaceModel;
  readonly indexByName: ReadonlyMap<string, ClusterIndex>;
  readonly contexts: ReadonlyMap<string, ClusterContext>;
  readonly routePolicies: ReadonlyMap<Owned<RouteTableSpec>, readonly RoutePolicySet[]>;
  readonly shared: readonly Sourced[];
  readonly scopeCache: ScopeCache;
  /** Scoping results kept across runs (see scope-memo.ts). */
  readonly scopeDecisions: ScopeDecisions;
  /** Per VirtualDestination (this run): what its ServiceEntries read besides the consumer. */
  readonly entryPlans: Map<VirtualDestinationModel, EntryPlan>;
  /** Digest of what a VirtualService reads beyond its route table and consumer (see pipeline.ts). */
  readonly routeWorld: string;
  /** Per route table (this run): the row of its VirtualService units (see routeRow). */
  readonly routeRows: Map<Owned<RouteTableSpec>, MemoRow>;
}

/** A candidate whose resource is the previous run's object when its content did not change. */
export function stableSourced(memo: TranslationMemo, scope: string, s: Sourced): Sourced {
  const slot = `${scope}\u0000${s.sources.join(',')}\u0000${formatResourceKey(resourceKey(s.resource))}`;
  const resource = memo.resource(slot, s.resource);
  return resource === s.resource ? s : { resource, sources: s.sources };
}

const routeKeys = new WeakMap<Resource, string>();

/** A digest of a route table resource (a short key part; computed once per input resource). */
function routeKey(rt: Owned<RouteTableSpec>): string {
  let key = routeKeys.get(rt.resource);
  if (key === undefined) {
    key = sha256Hex(resourceEncoding(rt.resource));
    routeKeys.set(rt.resource, key);
  }
  return key;
}

/**
 * The memo row of a route table's VirtualService units, one per consumer: its group is the
 * consumer-independent part of their key, the route table and what it reads beyond it (found
 * once per run and route table).
 */
function routeRow(rt: Owned<RouteTableSpec>, ctx: CandidateContext): MemoRow {
  let row = ctx.routeRows.get(rt);
  if (row === undefined) {
    row = ctx.memo.row('virtual-service', [rt.source, routeKey(rt), ctx.routeWorld].join('\u0000'));
    ctx.routeRows.set(rt, row);
  }
  return row;
}

/**
 * Memo hits between two yields of a loop over units (a hit costs well under a microsecond; a unit built yields at
 * once).
 */
const HITS_PER_YIELD = 32;

const contextKey = (c: ClusterContext | undefined): string =>
  c ? `${c.name}|${c.trustDomain}|${c.network}|${c.clusterDomain}` : '';

/** What the ServiceEntry of one VirtualDestination reads besides its consumer (the same for every consumer). */
interface EntryPlan {
  /**
   * The memo row of the ServiceEntry units, one per consumer: its group digests everything below and the model's
   * identity.
   */
  readonly row: MemoRow;
  readonly vip: string | undefined;
  /** Its policy and instance addresses (policy-vips.ts). */
  readonly addresses: SemanticAddresses;
  readonly subsetKeys: readonly string[];
  readonly sources: readonly string[];
  readonly gatewayOf: (cluster: string, index: ClusterIndex | undefined) => EastWestGateway | undefined;
}

function entryPlan(vd: VirtualDestinationModel, ctx: CandidateContext): EntryPlan {
  const { memo, model, demands, indexByName, contexts } = ctx;
  const demand = demands.get(demandKey('VIRTUAL_DESTINATION', vd.owned.namespace, vd.owned.name));
  const settings = model.settingsOf(vd.owned.workspace);
  const selectors = settings?.spec.options?.eastWestGateways ?? [];
  const gatewayOf = (_cluster: string, index: ClusterIndex | undefined): EastWestGateway | undefined =>
    selectors.length > 0 ? index?.eastWestGatewayFor(selectors) : index?.eastWestGateway;
  const vip = ctx.input.vips.get(vd.key);
  const addresses = semanticAddressesOf(vd, ctx.input.vips);
  const keys = subsetKeys(demand);
  const sources = [
    vd.owned.source,
    ...(demand?.sources ?? []),
    ...(selectors.length > 0 && settings ? [settings.source] : []),
  ];
  // What buildServiceEntry reads: the model, the consumer, and each backend cluster's network and gateway.
  const reads = vd.backends
    .map((b) => {
      const gw = gatewayOf(b.cluster, indexByName.get(b.cluster));
      return `${contextKey(contexts.get(b.cluster))}@${gw ? `${gw.address}:${gw.port}` : '-'}`;
    })
    .join('\u0000');
  const key = sha256Hex(
    [memo.id(vd), vip ?? '-', semanticAddressesKey(addresses), keys.join(','), sources.join(','), reads].join('\u0001'),
  );
  return { row: memo.row('service-entry', key), vip, addresses, subsetKeys: keys, sources, gatewayOf };
}

/** The ServiceEntry of every VirtualDestination for `consumer`: rebuilt only when something it reads changed. */
function* serviceEntries(consumer: ClusterContext, ctx: CandidateContext): Generator<void, Sourced[]> {
  const { memo, indexByName, contexts } = ctx;
  const consumerKey = contextKey(consumer);
  const out: Sourced[] = [];
  let hits = 0;
  for (const vd of ctx.models) {
    let plan = ctx.entryPlans.get(vd);
    if (plan === undefined) {
      plan = entryPlan(vd, ctx);
      ctx.entryPlans.set(vd, plan);
    }
    const { vip, addresses, subsetKeys: keys, sources, gatewayOf } = plan;
    let built = false;
    out.push(
      ...plan.row.unit(consumerKey, ctx.problems, () => {
        built = true;
        const se = buildServiceEntry(vd, consumer, indexByName, contexts, vip, keys, gatewayOf);
        const semantic = buildSemanticServiceEntries(vd, se, addresses, consumer, indexByName, contexts, gatewayOf);
        return [se, ...semantic].map((r) =>
          stableSourced(memo, `se\u0000${consumer.name}`, sourced(r, vd.owned.source, ...sources.slice(1))),
        );
      }),
    );
    if (built || ++hits % HITS_PER_YIELD === 0) yield;
  }
  return out;
}

/** Every output `name` could receive, before validation and scoping to what it may see. */
export function* candidateOutputs(name: string, ctx: CandidateContext): Generator<void, readonly Sourced[]> {
  const { memo, problems, inventory, model, indexByName, contexts, owners } = ctx;
  const consumer = contexts.get(name) as ClusterContext;
  const index = indexByName.get(name);
  const indexes = [...indexByName.values()];
  const routeCtx: RouteContext = {
    consumer,
    virtualDestinations: ctx.modelByKey,
    externalServices: groupByName(inventory.externalServices, (es) => `${es.namespace}/${es.name}`),
    virtualGateways: groupByName(inventory.virtualGateways, (vg) => `${vg.namespace}/${vg.name}`),
    routeTables: inventory.routeTables,
    routePolicies: ctx.routePolicies,
    indexes,
    workspaces: model,
    problems,
  };
  const stable = (s: Sourced): Sourced => stableSourced(memo, name, s);
  const consumerKey = contextKey(consumer);
  const entries = yield* serviceEntries(consumer, ctx);
  // Built in the order of the one-shot translation, so problems are reported in the same order.
  const subsetRules = serviceSubsetRules(ctx.demands, consumer).map(stable);
  const gateways = inventory.virtualGateways.flatMap((vg) =>
    buildGateways(vg, name, problems).map((gw) => stable(sourced(gw, vg.source))),
  );
  const virtualServices: Sourced[] = [];
  let hits = 0;
  for (const rt of inventory.routeTables) {
    // Workload selectors read the consumer's pods: then the consumer's index is part of the key.
    const pods = (rt.spec.workloadSelectors ?? []).length > 0 && index ? memo.id(index) : '-';
    let computed = false;
    const vs = routeRow(rt, ctx).unit(`${consumerKey}\u0000${pods}`, problems, (own) => {
      computed = true;
      const built = buildVirtualService(rt, { ...routeCtx, problems: own });
      return built ? stable(sourced(built.resource, rt.source, ...built.contributors)) : undefined;
    });
    if (vs) virtualServices.push(vs);
    if (computed || ++hits % HITS_PER_YIELD === 0) yield;
  }
  const all = [
    ...entries,
    ...subsetRules,
    ...ctx.shared,
    ...gateways,
    ...virtualServices,
    ...ctx.settings
      .filter((ws) => ws.spec.options?.serviceIsolation?.enabled === true && owners.has(ws.source))
      .flatMap((ws) =>
        isolationOutputs(owners.get(ws.source) ?? '', consumer, indexByName, model, contexts).map((r) =>
          stable(sourced(r, ws.source)),
        ),
      ),
  ];
  const reads = { consumer: name, world: ctx.routeWorld, index: index ? memo.id(index) : 0 };
  const scoped = scopeKept(all, reads, ctx.scopeDecisions, (list) =>
    scopeCandidates(list, name, index, model, owners, ctx.ownerObjects, ctx.scopeCache),
  );
  return homeFirst(scoped, name, model.defined, model.workspaceOf, (source) => owners.get(source));
}

/** The deny-by-default outputs of a security resource in one cluster (cached per run). */
export function denyByDefaultOf(
  security: ReadonlyMap<string, SecurityResource>,
  model: WorkspaceModel,
  indexByName: ReadonlyMap<string, ClusterIndex>,
  accessCtx: AccessContext,
): (source: string, cluster: string) => readonly Resource[] {
  const cache = new Map<string, readonly Resource[]>();
  return (source, cluster) => {
    const key = `${source}\u0000${cluster}`;
    let cached = cache.get(key);
    if (!cached) {
      const found = security.get(source);
      const ws = found ? (model.workspaceOf(found.cluster, found.resource.metadata.namespace ?? '') ?? '') : '';
      if (!found) cached = [];
      else if (isKind(found.resource, KINDS.WorkspaceSettings))
        cached = model.clustersOf(ws).includes(cluster)
          ? isolationDeny(ws, cluster, indexByName.get(cluster), model)
          : [];
      // Scoped like any output of the policy: only namespaces its workspace owns in this cluster.
      else
        cached = denyByDefault(found.resource, found.cluster, source, ws, accessCtx).filter(
          (r) => !model.defined || model.workspaceOf(cluster, r.metadata.namespace ?? '') === ws,
        );
      cache.set(key, cached);
    }
    return cached;
  };
}
