/**
 * The translator: admitted input snapshots -> one Istio output snapshot per admitted cluster.
 * Pure: no I/O, no clock, no randomness; clusters, resources and policies are visited in
 * sorted order, so equal inputs give byte-identical outputs (equal hashes) on every machine.
 */
import { buildOutputSnapshot, formatResourceKey, resourceKey, type OutputSnapshot, type Provenance, type Resource } from '@meshrelay/api';
import { buildAuthorizationPolicies } from './authorization-policy.ts';
import { indexCluster, type ClusterIndex } from './cluster-index.ts';
import { policiesFor } from './destination-policies.ts';
import { buildDestinationRules } from './destination-rule.ts';
import { validateInputResource } from './input-validation.ts';
import type { OutputValidator } from './istio-validator.ts';
import { buildInventory, type Inventory } from './inventory.ts';
import { ProblemSink } from './problems.ts';
import { retryPoliciesFor, type DestinationLookup } from './route-policies.ts';
import { buildServiceEntry, type ClusterContext } from './service-entry.ts';
import type { ClusterInfo, TranslationInput, TranslationResult } from './types.ts';
import { buildVirtualService, findService, type RouteContext } from './virtual-service.ts';
import { resolveVirtualDestinations, type VirtualDestinationModel } from './virtual-destinations.ts';

const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

function clusterContext(name: string, info: ClusterInfo | undefined): ClusterContext {
  return {
    name,
    trustDomain: info?.trustDomain ?? name,
    network: info?.network ?? name,
    clusterDomain: info?.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
  };
}

/** Drops input resources that fail validation (reported), so one bad resource does not stop the rest. */
function admittedResources(cluster: string, resources: readonly Resource[], problems: ProblemSink): Resource[] {
  const valid: Resource[] = [];
  for (const r of resources) {
    const issues = validateInputResource(r);
    if (issues.length === 0) valid.push(r);
    else {
      const detail = issues.map((p) => `${p.path}: ${p.message}`).join('; ');
      problems.add({ cluster, resource: formatResourceKey(resourceKey(r)), reason: `invalid input resource ignored: ${detail}` });
    }
  }
  return valid;
}

/** Outputs that are the same for every consuming cluster. */
interface SharedOutputs {
  readonly destinationRules: readonly Resource[];
  readonly authorizationPolicies: readonly Resource[];
}

function sharedOutputs(inventory: Inventory, models: readonly VirtualDestinationModel[], indexes: readonly ClusterIndex[], clusters: readonly ClusterContext[], problems: ProblemSink): SharedOutputs {
  const destinationRules = models.flatMap((vd) =>
    buildDestinationRules(vd, policiesFor(vd, inventory.failoverPolicies, inventory.outlierDetectionPolicies, problems)),
  );
  const accessCtx = { indexes, virtualDestinations: models, clusters, problems };
  const authorizationPolicies = inventory.accessPolicies.flatMap((p) => buildAuthorizationPolicies(p, accessCtx));
  return { destinationRules, authorizationPolicies };
}

/** Keeps the first resource per key; a later one with the same key is reported (two sources, one name). */
function dedupe(cluster: string, resources: readonly Resource[], problems: ProblemSink): Resource[] {
  const seen = new Set<string>();
  const out: Resource[] = [];
  for (const r of resources) {
    const key = formatResourceKey(resourceKey(r));
    if (seen.has(key)) {
      problems.add({ cluster, resource: key, reason: 'two sources produce an output with this name; the first is kept' });
      continue;
    }
    seen.add(key);
    out.push(r);
  }
  return out;
}

/**
 * Translates the admitted inputs. Every admitted cluster consumes every VirtualDestination,
 * RouteTable and AccessPolicy. A cluster whose outputs include an invalid resource gets no
 * output in this result (the caller keeps its previous one) and each invalid resource is a
 * problem. Each output's provenance is every admitted (cluster, input hash) pair.
 */
export function translate(input: TranslationInput, validator: OutputValidator): TranslationResult {
  const problems = new ProblemSink();
  const clusterNames = [...input.inputs.keys()].sort();
  const infoByName = new Map(input.clusters.map((c) => [c.name, c]));
  const knownNames = [...new Set([...clusterNames, ...infoByName.keys()])].sort();
  const contexts = new Map(knownNames.map((name) => [name, clusterContext(name, infoByName.get(name))]));

  const perCluster = new Map<string, Resource[]>();
  for (const name of clusterNames) perCluster.set(name, admittedResources(name, input.inputs.get(name)?.resources ?? [], problems));
  const indexes = clusterNames.map((name) => indexCluster(name, perCluster.get(name) ?? []));
  const indexByName = new Map(indexes.map((i) => [i.cluster, i]));
  const inventory = buildInventory(perCluster, problems);
  const models = resolveVirtualDestinations(inventory.virtualDestinations, indexes, problems);
  const modelByKey = new Map(models.map((m) => [m.key, m]));
  const shared = sharedOutputs(inventory, models, indexes, [...contexts.values()], problems);

  const lookup: DestinationLookup = (rt, ref) => {
    if (ref.kind === 'VIRTUAL_DESTINATION') {
      const vd = modelByKey.get(`${ref.ref.namespace ?? rt.namespace}/${ref.ref.name}`);
      return vd ? { name: vd.owned.name, namespace: vd.owned.namespace, cluster: vd.owned.cluster, labels: vd.owned.labels } : undefined;
    }
    return findService(rt, ref, indexes);
  };
  const retryPolicies = new Map(inventory.routeTables.map((rt) => [rt, retryPoliciesFor(rt, inventory.retryTimeoutPolicies, lookup, problems)]));
  const provenance: Provenance[] = clusterNames.map((name) => ({ cluster: name, inputHash: input.inputs.get(name)?.hash ?? '' }));

  const outputs = new Map<string, OutputSnapshot>();
  // Shared outputs are the same objects in every cluster: validate each once.
  const verdicts = new Map<Resource, string[]>();
  const check = (r: Resource): string[] => {
    let issues = verdicts.get(r);
    if (!issues) {
      issues = validator.validate(r);
      verdicts.set(r, issues);
    }
    return issues;
  };
  for (const name of clusterNames) {
    const consumer = contexts.get(name) as ClusterContext;
    const routeCtx: RouteContext = { consumer, virtualDestinations: modelByKey, indexes, problems };
    const resources = dedupe(
      name,
      [
        ...models.map((vd) => buildServiceEntry(vd, consumer, indexByName, contexts, input.vips.get(vd.key))),
        ...shared.destinationRules,
        ...inventory.routeTables.map((rt) => buildVirtualService(rt, retryPolicies.get(rt) ?? [], routeCtx)),
        ...shared.authorizationPolicies,
      ],
      problems,
    );
    let valid = true;
    for (const r of resources) {
      const issues = check(r);
      if (issues.length === 0) continue;
      valid = false;
      problems.add({ cluster: name, resource: formatResourceKey(resourceKey(r)), reason: `invalid output, cluster output withheld: ${issues.join('; ')}` });
    }
    if (valid) outputs.set(name, buildOutputSnapshot({ cluster: name, resources, provenance }));
  }
  return { outputs, problems: problems.sorted() };
}

