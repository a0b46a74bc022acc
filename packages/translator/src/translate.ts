/**
 * The translator: admitted input snapshots -> one Istio output snapshot per admitted cluster,
 * plus a Gloo-shaped status per Gloo input resource.
 * Pure: no I/O, no clock, no randomness; clusters, resources and policies are visited in
 * sorted order, so equal inputs give byte-identical outputs (equal hashes) on every machine.
 */
import { KINDS, findInputKind, formatResourceKey, isKind, isMeshConfigMap, resourceKey, type Provenance, type Resource } from '@meshrelay/api';
import { buildAuthorizationPolicies, buildPeerAuthentications, type AccessContext } from './authorization-policy.ts';
import { indexCluster, type ClusterIndex } from './cluster-index.ts';
import { policiesFor } from './destination-policies.ts';
import { buildDestinationRules } from './destination-rule.ts';
import { emitOutputs } from './emit.ts';
import { buildExternalDestinationRules, buildExternalServiceEntry, buildWorkloadEntry } from './external-service.ts';
import { isGlooResource, unimplementedFieldsOf, validateInputResource } from './input-validation.ts';
import type { OutputValidator } from './istio-validator.ts';
import { buildInventory, describeOwned, type Inventory, type Owned } from './inventory.ts';
import { delegatedTables } from './delegation.ts';
import type { RouteTableSpec } from './gloo-types.ts';
import { ProblemSink } from './problems.ts';
import type { DestinationLookup } from './route-policies.ts';
import { routePolicySets } from './route-policy-fields.ts';
import { denyByDefault } from './security-fallback.ts';
import { buildServiceEntry, type ClusterContext } from './service-entry.ts';
import { sourced, type Sourced } from './sources.ts';
import { StatusBook } from './status-book.ts';
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

interface Admission {
  readonly perCluster: Map<string, Resource[]>;
  /** Every AccessPolicy found (valid or not) by source id: these fail closed. */
  readonly security: Map<string, { readonly cluster: string; readonly resource: Resource }>;
}

/**
 * Registers every Gloo resource (any `*.solo.io` group gets a status, whatever its kind) and
 * drops input resources that fail validation (INVALID, with the fields named), so one bad
 * resource does not stop the rest. A valid resource that sets a field Meshrelay does not
 * implement is WARNING naming the field and translated without it, unless ignoring the field
 * would weaken security: then it is INVALID and not translated (so it fails closed).
 */
function admit(input: TranslationInput, clusterNames: readonly string[], book: StatusBook, problems: ProblemSink): Admission {
  const perCluster = new Map<string, Resource[]>();
  const security = new Map<string, { cluster: string; resource: Resource }>();
  for (const cluster of clusterNames) {
    const valid: Resource[] = [];
    for (const r of input.inputs.get(cluster)?.resources ?? []) {
      if (isGlooResource(r)) {
        const id = book.register(cluster, r);
        if (isKind(r, KINDS.AccessPolicy)) security.set(id, { cluster, resource: r });
      }
      // Kubernetes objects that are not inputs (a Namespace, a ConfigMap) are not problems.
      if (!isGlooResource(r) && (!findInputKind(r.apiVersion, r.kind) || (isKind(r, KINDS.ConfigMap) && !isMeshConfigMap(r)))) continue;
      const resource = formatResourceKey(resourceKey(r));
      const issues = validateInputResource(r);
      if (issues.length > 0) {
        const detail = issues.map((p) => `${p.path}: ${p.message}`).join('; ');
        problems.add({ cluster, resource, reason: `invalid input resource ignored: ${detail}`, approval: 'INVALID' });
        continue;
      }
      const unimplemented = unimplementedFieldsOf(r);
      for (const f of unimplemented) {
        if (f.effect === 'WARNING') problems.add({ cluster, resource, reason: `${f.path} is not implemented by Meshrelay; ignored` });
        else problems.add({ cluster, resource, reason: `${f.path} is not implemented by Meshrelay and ignoring it would weaken security; not translated`, approval: 'INVALID' });
      }
      if (unimplemented.every((f) => f.effect === 'WARNING')) valid.push(r);
    }
    perCluster.set(cluster, valid);
  }
  return { perCluster, security };
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

/**
 * Translates the admitted inputs. Every admitted cluster consumes every VirtualDestination,
 * RouteTable and AccessPolicy. Failures are isolated per Gloo resource (see emit.ts): every
 * admitted cluster gets an output. Each output's provenance is every admitted (cluster, input
 * hash) pair, and each output names its Gloo sources in the `meshrelay.io/sources` annotation.
 */
export function translate(input: TranslationInput, validator: OutputValidator): TranslationResult {
  const problems = new ProblemSink();
  const book = new StatusBook();
  const clusterNames = [...input.inputs.keys()].sort();
  const infoByName = new Map(input.clusters.map((c) => [c.name, c]));
  const knownNames = [...new Set([...clusterNames, ...infoByName.keys()])].sort();

  const { perCluster, security } = admit(input, clusterNames, book, problems);
  const indexes = clusterNames.map((name) => indexCluster(name, perCluster.get(name) ?? []));
  const indexByName = new Map(indexes.map((i) => [i.cluster, i]));
  const contexts = new Map(knownNames.map((name) => [name, clusterContext(name, infoByName.get(name), indexByName.get(name))]));
  const inventory = buildInventory(perCluster, problems);
  const models = resolveVirtualDestinations(inventory.virtualDestinations, indexes, problems);
  const modelByKey = new Map(models.map((m) => [m.key, m]));
  const externalServices = new Map(inventory.externalServices.map((es) => [`${es.namespace}/${es.name}`, es]));
  const virtualGateways = new Map(inventory.virtualGateways.map((vg) => [`${vg.namespace}/${vg.name}`, vg]));
  const accessCtx: AccessContext = { indexes, virtualDestinations: models, clusters: [...contexts.values()], problems };
  const demands = collectSubsets(inventory.routeTables, problems);
  const shared = sharedOutputs(inventory, models, demands, accessCtx, problems);

  const lookup: DestinationLookup = (rt, ref) => {
    if (ref.kind === 'VIRTUAL_DESTINATION') {
      const vd = modelByKey.get(`${ref.ref.namespace ?? rt.namespace}/${ref.ref.name}`);
      return vd ? { name: vd.owned.name, namespace: vd.owned.namespace, cluster: vd.owned.cluster, labels: vd.owned.labels } : undefined;
    }
    return findService(rt, ref, indexes);
  };
  reportOrphanRouteTables(inventory.routeTables, problems);
  const routePolicies = new Map(inventory.routeTables.map((rt) => [rt, routePolicySets(rt, inventory, lookup, problems)]));
  const provenance: Provenance[] = clusterNames.map((name) => ({ cluster: name, inputHash: input.inputs.get(name)?.hash ?? '' }));

  const candidates = new Map<string, Sourced[]>();
  for (const name of clusterNames) {
    const consumer = contexts.get(name) as ClusterContext;
    const routeCtx: RouteContext = { consumer, virtualDestinations: modelByKey, externalServices, virtualGateways, routeTables: inventory.routeTables, routePolicies, indexes, problems };
    candidates.set(name, [
      ...models.map((vd) => {
        const demand = demands.get(demandKey('VIRTUAL_DESTINATION', vd.owned.namespace, vd.owned.name));
        const se = buildServiceEntry(vd, consumer, indexByName, contexts, input.vips.get(vd.key), subsetKeys(demand));
        return sourced(se, vd.owned.source, ...(demand?.sources ?? []));
      }),
      ...serviceSubsetRules(demands, consumer),
      ...shared,
      ...inventory.virtualGateways.flatMap((vg) => buildGateways(vg, name, problems).map((gw) => sourced(gw, vg.source))),
      ...inventory.routeTables.flatMap((rt) => {
        const vs = buildVirtualService(rt, routeCtx);
        return vs ? [sourced(vs.resource, rt.source, ...vs.contributors)] : [];
      }),
    ]);
  }
  const denyCache = new Map<string, readonly Resource[]>();
  const deny = (source: string): readonly Resource[] => {
    let cached = denyCache.get(source);
    if (!cached) {
      const found = security.get(source);
      cached = found ? denyByDefault(found.resource, found.cluster, source, accessCtx) : [];
      denyCache.set(source, cached);
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
