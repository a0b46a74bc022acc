/**
 * The translator: admitted input snapshots -> one Istio output snapshot per admitted cluster,
 * plus a Gloo-shaped status per Gloo input resource.
 * Pure: no I/O, no clock, no randomness; clusters, resources and policies are visited in
 * sorted order, so equal inputs give byte-identical outputs (equal hashes) on every machine.
 */
import { KINDS, isKind, type Provenance, type Resource } from '@meshrelay/api';
import { buildAuthorizationPolicies, buildPeerAuthentications, type AccessContext } from './authorization-policy.ts';
import { indexCluster, type ClusterIndex, type EastWestGateway } from './cluster-index.ts';
import { policiesFor } from './destination-policies.ts';
import { buildDestinationRules } from './destination-rule.ts';
import { emitOutputs } from './emit.ts';
import { federatedDestinations } from './federation.ts';
import { buildExternalDestinationRules, buildExternalServiceEntry, buildWorkloadEntry } from './external-service.ts';
import { admit } from './admission.ts';
import type { OutputValidator } from './istio-validator.ts';
import { buildInventory, describeOwned, type Inventory, type Owned } from './inventory.ts';
import { delegatedTables } from './delegation.ts';
import type { RouteTableSpec } from './gloo-types.ts';
import { ProblemSink } from './problems.ts';
import type { DestinationLookup } from './route-policies.ts';
import { routePolicySets } from './route-policy-fields.ts';
import { denyByDefault } from './security-fallback.ts';
import { buildServiceEntry, type ClusterContext } from './service-entry.ts';
import type { Selectable } from './selectors.ts';
import { sourceId, sourced, type Sourced } from './sources.ts';
import { StatusBook } from './status-book.ts';
import { admitWorkspaces, isolationDeny, isolationOutputs, keepOwned, scopeCandidates, type ScopeCache } from './workspace-outputs.ts';
import { buildWorkspaceModel, type WorkspaceModel, type WorkspaceSettingsSpec } from './workspaces.ts';
import { buildServiceSubsetRule, collectSubsets, demandKey, subsetKeys, subsetList, type SubsetDemands } from './subsets.ts';
import type { ClusterInfo, TranslationInput, TranslationResult } from './types.ts';
import { buildVirtualService, findService, type RouteContext } from './virtual-service.ts';
import { buildGateways } from './virtual-gateway.ts';
import { resolveVirtualDestinations, type VirtualDestinationModel } from './virtual-destinations.ts';

const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';
/** Istio's default meshConfig.trustDomain. */
const DEFAULT_TRUST_DOMAIN = 'cluster.local';

/** A cluster's trust domain: the registry's, else its mesh config's, else Istio's default. */
function clusterContext(name: string, info: ClusterInfo | undefined, index: ClusterIndex | undefined): ClusterContext {
  return {
    name,
    trustDomain: info?.trustDomain ?? index?.trustDomain ?? DEFAULT_TRUST_DOMAIN,
    network: info?.network ?? name,
    clusterDomain: info?.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
  };
}

/** Outputs that are the same for every consuming cluster. */
function sharedOutputs(inventory: Inventory, models: readonly VirtualDestinationModel[], demands: SubsetDemands, accessCtx: AccessContext, problems: ProblemSink): Sourced[] {
  const destinationRules = models.flatMap((vd) => {
    const policies = policiesFor(vd, inventory.failoverPolicies, inventory.outlierDetectionPolicies, problems);
    const demand = demands.get(demandKey('VIRTUAL_DESTINATION', vd.owned.namespace, vd.owned.name));
    return buildDestinationRules(vd, policies, subsetList(demand)).map((dr) =>
      sourced(dr, vd.owned.source, policies.failover?.source, policies.outlierDetection?.source, ...(demand?.sources ?? [])),
    );
  });
  const authorizationPolicies = inventory.accessPolicies.flatMap((p) =>
    [...buildAuthorizationPolicies(p, accessCtx), ...buildPeerAuthentications(p, accessCtx)].map((out) => sourced(out, p.source)),
  );
  const external = inventory.externalServices.flatMap((es) => {
    const entry = buildExternalServiceEntry(es, inventory.externalEndpoints);
    return [sourced(entry.resource, es.source, ...entry.endpointSources), ...buildExternalDestinationRules(es).map((dr) => sourced(dr, es.source))];
  });
  const workloadEntries = inventory.externalEndpoints.map((ee) => sourced(buildWorkloadEntry(ee), ee.source));
  return [...destinationRules, ...authorizationPolicies, ...external, ...workloadEntries];
}

/** A route table without hosts that no route delegates to produces nothing: say so. */
function reportOrphanRouteTables(routeTables: readonly Owned<RouteTableSpec>[], problems: ProblemSink): void {
  const delegated = new Set(
    routeTables.flatMap((parent) => (parent.spec.http ?? []).flatMap((route) => (route.delegate ? delegatedTables(parent, route.delegate, routeTables) : []))),
  );
  for (const rt of routeTables) {
    if ((rt.spec.hosts ?? []).length > 0 || delegated.has(rt)) continue;
    problems.add({ cluster: rt.cluster, resource: describeOwned(rt), reason: 'has no hosts and no route table delegates to it: nothing is produced' });
  }
}

/** The DestinationRules holding the subsets route tables ask of plain Services, for one consumer. */
function serviceSubsetRules(demands: SubsetDemands, consumer: ClusterContext): Sourced[] {
  return [...demands]
    .filter(([key]) => key.startsWith('SERVICE:'))
    .map(([key, demand]) => {
      const [namespace, name] = key.slice('SERVICE:'.length).split('/') as [string, string];
      const [owner, ...rest] = [...demand.sources].sort() as [string, ...string[]];
      return sourced(buildServiceSubsetRule(namespace, name, consumer.clusterDomain, demand), owner, ...rest);
    });
}

/** The WorkspaceSettings of the admitted inputs, as owned resources (their workspace is what the model decides). */
function workspaceSettings(perCluster: ReadonlyMap<string, readonly Resource[]>): Owned<WorkspaceSettingsSpec>[] {
  return [...perCluster].flatMap(([cluster, resources]) =>
    resources
      .filter((r) => isKind(r, KINDS.WorkspaceSettings))
      .map((r) => ({ source: sourceId(r, cluster), workspace: '', cluster, namespace: r.metadata.namespace ?? '', name: r.metadata.name, labels: r.metadata.labels ?? {}, resource: r, spec: (r.spec ?? {}) as WorkspaceSettingsSpec })),
  );
}

/** Owner workspace and identity of every Gloo resource of the inventory, by source id. */
function sourceOwners(inventory: Inventory, settings: readonly Owned<WorkspaceSettingsSpec>[], model: WorkspaceModel): { workspaces: Map<string, string>; objects: Map<string, Selectable> } {
  const all: Owned<unknown>[] = [...Object.values(inventory).flat(), ...settings];
  return {
    workspaces: new Map(all.map((o) => [o.source, model.workspaceOf(o.cluster, o.namespace) ?? ''])),
    objects: new Map(all.map((o) => [o.source, { name: o.name, namespace: o.namespace, cluster: o.cluster, labels: o.labels }])),
  };
}

/**
 * Translates the admitted inputs. Every admitted cluster consumes what the workspaces it is in
 * own or import (with no Workspace defined: everything). Failures are isolated per Gloo
 * resource (see emit.ts): every admitted cluster gets an output. Each output's provenance is
 * every admitted (cluster, input hash) pair, and each output names its Gloo sources in the
 * `meshrelay.io/sources` annotation.
 */
export function translate(input: TranslationInput, validator: OutputValidator): TranslationResult {
  const problems = new ProblemSink();
  const book = new StatusBook();
  const clusterNames = [...input.inputs.keys()].sort();
  const infoByName = new Map(input.clusters.map((c) => [c.name, c]));
  const knownNames = [...new Set([...clusterNames, ...infoByName.keys()])].sort();

  const managed = admitWorkspaces(input.workspaces ?? [], book, problems);
  const { perCluster, security } = admit(input, clusterNames, book, problems);
  const settings = workspaceSettings(perCluster);
  const model = buildWorkspaceModel(managed, settings, new Map(knownNames.map((n) => [n, infoByName.get(n)?.labels ?? {}])), problems);
  keepOwned(perCluster, model, problems);
  const indexes = clusterNames.map((name) => indexCluster(name, perCluster.get(name) ?? [], model.workspaceOf));
  const indexByName = new Map(indexes.map((i) => [i.cluster, i]));
  const contexts = new Map(knownNames.map((name) => [name, clusterContext(name, infoByName.get(name), indexByName.get(name))]));
  const inventory = buildInventory(perCluster, problems, model.workspaceOf);
  const { workspaces: owners, objects: ownerObjects } = sourceOwners(inventory, settings, model);
  const federated = settings.flatMap((ws) => (owners.has(ws.source) ? federatedDestinations(ws, owners.get(ws.source) ?? '', indexes) : []));
  const models = resolveVirtualDestinations([...inventory.virtualDestinations, ...federated], indexes, problems, model);
  const modelByKey = new Map(models.map((m) => [m.key, m]));
  const externalServices = new Map(inventory.externalServices.map((es) => [`${es.namespace}/${es.name}`, es]));
  const virtualGateways = new Map(inventory.virtualGateways.map((vg) => [`${vg.namespace}/${vg.name}`, vg]));
  const accessCtx: AccessContext = { indexes, virtualDestinations: models, clusters: [...contexts.values()], workspaceOf: model.workspaceOf, problems };
  const demands = collectSubsets(inventory.routeTables, problems);
  const shared = sharedOutputs(inventory, models, demands, accessCtx, problems);

  const lookup: DestinationLookup = (rt, ref) => {
    if (ref.kind === 'VIRTUAL_DESTINATION') {
      const vd = modelByKey.get(`${ref.ref.namespace ?? rt.namespace}/${ref.ref.name}`);
      return vd ? { name: vd.owned.name, namespace: vd.owned.namespace, cluster: vd.owned.cluster, labels: vd.owned.labels, workspace: vd.owned.workspace } : undefined;
    }
    return findService(rt, ref, indexes);
  };
  reportOrphanRouteTables(inventory.routeTables, problems);
  const routePolicies = new Map(inventory.routeTables.map((rt) => [rt, routePolicySets(rt, inventory, lookup, problems)]));
  const provenance: Provenance[] = clusterNames.map((name) => ({ cluster: name, inputHash: input.inputs.get(name)?.hash ?? '' }));

  const candidates = new Map<string, Sourced[]>();
  const scopeCache: ScopeCache = new Map();
  for (const name of clusterNames) {
    const consumer = contexts.get(name) as ClusterContext;
    const index = indexByName.get(name);
    const routeCtx: RouteContext = { consumer, virtualDestinations: modelByKey, externalServices, virtualGateways, routeTables: inventory.routeTables, routePolicies, indexes, workspaces: model, problems };
    const all = [
      ...models.map((vd) => {
        const demand = demands.get(demandKey('VIRTUAL_DESTINATION', vd.owned.namespace, vd.owned.name));
        const settings = model.settingsOf(vd.owned.workspace);
        const selectors = settings?.spec.options?.eastWestGateways ?? [];
        const gatewayOf = (cluster: string, index: ClusterIndex | undefined): EastWestGateway | undefined => (selectors.length > 0 ? index?.eastWestGatewayFor(selectors) : index?.eastWestGateway);
        const se = buildServiceEntry(vd, consumer, indexByName, contexts, input.vips.get(vd.key), subsetKeys(demand), gatewayOf);
        return sourced(se, vd.owned.source, ...(demand?.sources ?? []), ...(selectors.length > 0 && settings ? [settings.source] : []));
      }),
      ...serviceSubsetRules(demands, consumer),
      ...shared,
      ...inventory.virtualGateways.flatMap((vg) => buildGateways(vg, name, problems).map((gw) => sourced(gw, vg.source))),
      ...inventory.routeTables.flatMap((rt) => {
        const vs = buildVirtualService(rt, routeCtx);
        return vs ? [sourced(vs.resource, rt.source, ...vs.contributors)] : [];
      }),
      ...settings
        .filter((ws) => ws.spec.options?.serviceIsolation?.enabled === true && owners.has(ws.source))
        .flatMap((ws) => isolationOutputs(owners.get(ws.source) ?? '', consumer, indexByName, model, contexts).map((r) => sourced(r, ws.source))),
    ];
    candidates.set(name, scopeCandidates(all, name, index, model, owners, ownerObjects, scopeCache));
  }
  const denyCache = new Map<string, readonly Resource[]>();
  const deny = (source: string, cluster: string): readonly Resource[] => {
    const key = `${source}\u0000${cluster}`;
    let cached = denyCache.get(key);
    if (!cached) {
      const found = security.get(source);
      const ws = found ? (model.workspaceOf(found.cluster, found.resource.metadata.namespace ?? '') ?? '') : '';
      if (!found) cached = [];
      else if (isKind(found.resource, KINDS.WorkspaceSettings)) cached = model.clustersOf(ws).includes(cluster) ? isolationDeny(ws, cluster, indexByName.get(cluster), model) : [];
      // Scoped like any output of the policy: only namespaces its workspace owns in this cluster.
      else cached = denyByDefault(found.resource, found.cluster, source, ws, accessCtx).filter((r) => !model.defined || model.workspaceOf(cluster, r.metadata.namespace ?? '') === ws);
      denyCache.set(key, cached);
    }
    return cached;
  };
  book.absorb(problems);
  const emitted = emitOutputs({
    candidates,
    provenance,
    securitySources: [...security.keys()].sort(),
    previousSecurityOutputs: input.previousSecurityOutputs ?? new Map(),
    denyByDefault: deny,
    validator,
    book,
    problems,
  });
  return { outputs: emitted.outputs, problems: problems.sorted(), statuses: book.statuses(), securityOutputs: emitted.securityOutputs };
}
