/**
 * The translation pipeline as a generator: it yields between units of work (a cluster, a
 * VirtualDestination) so a driver may hand the event loop back, and asks its memo for every
 * unit it may reuse. `translate()` drives it to the end at once with a memo that reuses
 * nothing; `IncrementalTranslator` drives it cooperatively with a memo of the last run.
 * Equal inputs give equal results whatever the memo (see translation-memo.ts).
 */
import {
  KINDS,
  canonicalJson,
  isKind,
  resourceEncoding,
  sha256Hex,
  type InputSnapshot,
  type Provenance,
  type Resource,
} from '@meshrelay/api';
import { admitCluster, registerGloo, type AdmittedCluster, type SecurityResource } from '../gloo/admission.ts';
import { isGlooResource } from '../gloo/input-validation.ts';
import type { AccessContext } from '../istio/authorization-policy.ts';
import { indexCluster, type ClusterIndex } from '../gloo/cluster-index.ts';
import { emitSteps, type ClusterEmit } from './emit.ts';
import { federatedDestinations } from '../workspaces/federation.ts';
import { clusterDestinationDemands, clusterDestinations } from '../istio/cluster-destinations.ts';
import type { VirtualDestinationSpec } from '../gloo/gloo-types.ts';
import { buildInventory, type Owned } from '../gloo/inventory.ts';
import type { OutputValidator } from '../istio/istio-validator.ts';
import { ProblemSink } from './problems.ts';
import type { Sourced } from './sources.ts';
import type { DestinationLookup } from '../gloo/route-policies.ts';
import { routePolicySets } from '../istio/route-policy-fields.ts';
import { candidateOutputs, denyByDefaultOf, stableSourced, type CandidateContext } from './pipeline-candidates.ts';
import { StatusBook } from './status-book.ts';
import { collectSubsets } from '../istio/subsets.ts';
import {
  clusterContext,
  reportOrphanRouteTables,
  sharedOutputs,
  sourceOwners,
  workspaceSettings,
} from './translate-parts.ts';
import type { TranslationMemo } from './translation-memo.ts';
import type { TranslationInput, TranslationResult } from './types.ts';
import { findService } from '../istio/virtual-service.ts';
import {
  resolveBackend,
  resolveVirtualDestination,
  type VirtualDestinationModel,
} from '../gloo/virtual-destinations.ts';
import { admitWorkspaces, keepOwned } from '../workspaces/workspace-outputs.ts';
import { buildWorkspaceModel, type WorkspaceModel } from '../workspaces/workspaces.ts';
import { sameContent } from './same-content.ts';
import { reportEmptySelectors } from '../workspaces/selector-checks.ts';
import { groupByName, ownFirst } from '../workspaces/workspace-names.ts';

/** Everything a VirtualDestination's resolution reads of the resource itself. */
function ownedKey(vd: Owned<VirtualDestinationSpec>): string {
  // A digest keeps the keys short: they are looked up once per cluster and destination every run.
  return digestOf([
    vd.source,
    vd.workspace,
    vd.cluster,
    vd.namespace,
    vd.name,
    vd.labels,
    vd.spec,
    resourceEncoding(vd.resource),
  ]);
}

/** sha256 of the canonical encoding of `value`: a short key part that names all of it. */
function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * A digest of a cluster's Service resources (what route resolution reads of an index, with the
 * workspace model that `routeWorldDigest` names too). Input resources keep their encodings, so
 * this hashes text already there instead of encoding every Service again.
 */
function servicesDigest(resources: readonly Resource[]): string {
  return sha256Hex(
    resources
      .filter((r) => isKind(r, KINDS.Service))
      .map(resourceEncoding)
      .join('\u0000'),
  );
}

/**
 * A digest of everything a VirtualService reads beyond its route table and its consumer: every
 * admitted Gloo resource and the cluster it came from, the workspace model's inputs, the
 * resolved VirtualDestinations, and every cluster's Services (not their endpoints or pods).
 */
function routeWorldDigest(
  ownedGloo: ReadonlyMap<string, readonly Resource[]>,
  workspaceKey: string,
  models: readonly VirtualDestinationModel[],
  services: ReadonlyMap<string, string>,
): string {
  const gloo = [...ownedGloo].map(([cluster, list]) => `${cluster}\u0000${list.map(resourceEncoding).join('\u0000')}`);
  return sha256Hex(
    [
      workspaceKey,
      ...gloo,
      models.map((m) => m.key).join(','),
      ...[...services].map(([cluster, digest]) => `${cluster}:${digest}`),
    ].join('\u0001'),
  );
}

/** Resolves the VirtualDestinations, one unit each; a backend is recomputed only when its cluster's index changed. */
function* resolveAll(
  vds: readonly Owned<VirtualDestinationSpec>[],
  indexes: readonly ClusterIndex[],
  model: WorkspaceModel,
  workspaceKey: string,
  memo: TranslationMemo,
  problems: ProblemSink,
): Generator<void, VirtualDestinationModel[]> {
  const models: VirtualDestinationModel[] = [];
  for (const vd of vds) {
    const key = ownedKey(vd);
    const computedRow = memo.row('backend', `${key}\u0000${workspaceKey}`);
    const contentRow = memo.row('backend-content', vd.source);
    const backends: object[] = [];
    const resolved = resolveVirtualDestination(vd, indexes, problems, model, (v, index, sink, ws) => {
      const computed = computedRow.unit(memo.id(index), sink, (own) => resolveBackend(v, index, own, ws));
      const backend = contentRow.keep(index.cluster, computed, sameContent);
      if (typeof backend === 'object') backends.push(backend);
      return backend;
    });
    if (resolved)
      models.push(
        memo.unit('vd-model', `${key}\u0000${backends.map((b) => memo.id(b)).join(',')}`, problems, () => resolved),
      );
    yield;
  }
  return models;
}

/**
 * The whole translation (see translate.ts for the contract). Yields between units of work.
 */
export function* translationSteps(
  input: TranslationInput,
  validator: OutputValidator,
  memo: TranslationMemo,
): Generator<void, TranslationResult> {
  const problems = new ProblemSink();
  const book = new StatusBook();
  const clusterNames = [...input.inputs.keys()].sort();
  const infoByName = new Map(input.clusters.map((c) => [c.name, c]));
  const knownNames = [...new Set([...clusterNames, ...infoByName.keys()])].sort();

  const managed = admitWorkspaces(input.workspaces ?? [], book, problems);
  const perCluster = new Map<string, Resource[]>();
  const validGloo = new Map<string, readonly Resource[]>();
  const security = new Map<string, SecurityResource>();
  const isJudgedClean = (snapshot: InputSnapshot | undefined): boolean =>
    snapshot !== undefined && input.judgements?.isClean(snapshot.resources) === true;
  for (const name of clusterNames) {
    const snapshot = input.inputs.get(name);
    // Inputs are validated once per content: the hash covers every resource.
    const before = memo.last<AdmittedCluster>('admitted', name);
    const admitted = yield* memo.unitSteps('admit', `${name}\u0000${snapshot?.hash ?? ''}`, problems, (own) =>
      admitCluster(name, snapshot?.resources ?? [], own, isJudgedClean(snapshot), before),
    );
    memo.keep('admitted', name, admitted, () => false);
    registerGloo(name, admitted, book, security);
    perCluster.set(name, [...admitted.valid]);
    validGloo.set(name, admitted.validGloo);
    yield;
  }
  const settings = workspaceSettings(validGloo);
  const labels = new Map(knownNames.map((n) => [n, infoByName.get(n)?.labels ?? {}]));
  const model = buildWorkspaceModel(managed, settings, labels, problems);
  // Everything the workspace model is built from: ownership and visibility depend on nothing else.
  const workspaceKey = digestOf([
    (input.workspaces ?? []).map(resourceEncoding),
    settings.map((s) => [s.cluster, resourceEncoding(s.resource)]),
    [...labels],
  ]);
  const indexes: ClusterIndex[] = [];
  const ownedGloo = new Map<string, readonly Resource[]>();
  const services = new Map<string, string>();
  for (const name of clusterNames) {
    const hash = input.inputs.get(name)?.hash ?? '';
    const unit = memo.unit('index', `${name}\u0000${hash}\u0000${workspaceKey}`, problems, (own) => {
      const owned = new Map([[name, perCluster.get(name) ?? []]]);
      keepOwned(owned, model, own);
      const resources = owned.get(name) ?? [];
      return {
        resources,
        gloo: resources.filter(isGlooResource),
        index: indexCluster(name, resources, model.workspaceOf),
        services: servicesDigest(resources),
      };
    });
    services.set(name, unit.services);
    perCluster.set(name, [...unit.resources]);
    ownedGloo.set(name, unit.gloo);
    indexes.push(unit.index);
    yield;
  }
  const indexByName = new Map(indexes.map((i) => [i.cluster, i]));
  const contexts = new Map(
    knownNames.map((name) => [name, clusterContext(name, infoByName.get(name), indexByName.get(name))]),
  );
  const inventory = buildInventory(ownedGloo, problems, model.workspaceOf, input.previousNameOwners);
  reportEmptySelectors(ownedGloo, input.workspaces ?? [], managed, model, knownNames, problems);
  const { workspaces: owners, objects: ownerObjects } = sourceOwners(inventory, settings, model);
  const federated = settings.flatMap((ws) =>
    owners.has(ws.source) ? federatedDestinations(ws, owners.get(ws.source) ?? '', indexes) : [],
  );
  const models = yield* resolveAll(
    [...inventory.virtualDestinations, ...federated, ...clusterDestinations(inventory.routeTables, indexes)],
    indexes,
    model,
    workspaceKey,
    memo,
    problems,
  );
  const modelByKey = groupByName(models, (m) => m.key);
  const accessCtx: AccessContext = {
    indexes,
    virtualDestinations: models,
    clusters: [...contexts.values()],
    workspaceOf: model.workspaceOf,
    problems,
  };
  const demands = new Map([
    ...collectSubsets(inventory.routeTables, problems),
    ...clusterDestinationDemands(inventory.routeTables),
  ]);
  const shared = (yield* sharedOutputs(inventory, models, demands, accessCtx, problems, input.vips)).map((s) =>
    stableSourced(memo, 'shared', s),
  );
  const lookup: DestinationLookup = (rt, ref) => {
    if (ref.kind === 'VIRTUAL_DESTINATION') {
      const vd = ownFirst(
        modelByKey.get(`${ref.ref.namespace ?? rt.namespace}/${ref.ref.name}`),
        rt.workspace,
        (m) => m.owned.workspace,
        (m) => model.visible(m.owned.workspace, rt.workspace, 'VIRTUAL_DESTINATION', m.owned),
      )?.owned;
      return vd
        ? { name: vd.name, namespace: vd.namespace, cluster: vd.cluster, labels: vd.labels, workspace: vd.workspace }
        : undefined;
    }
    return findService(rt, ref, indexes);
  };
  reportOrphanRouteTables(inventory.routeTables, problems);
  const routePolicies = new Map(
    inventory.routeTables.map((rt) => [rt, routePolicySets(rt, inventory, lookup, problems)]),
  );
  const provenance: Provenance[] = clusterNames.map((name) => ({
    cluster: name,
    inputHash: input.inputs.get(name)?.hash ?? '',
  }));

  const ctx: CandidateContext = {
    input,
    memo,
    problems,
    inventory,
    models,
    modelByKey,
    demands,
    settings,
    owners,
    ownerObjects,
    model,
    indexByName,
    contexts,
    routePolicies,
    shared,
    scopeCache: memo.scopes(),
    scopeDecisions: memo.scopeDecisions(),
    entryPlans: new Map(),
    routeRows: new Map(),
    routeWorld: routeWorldDigest(ownedGloo, workspaceKey, models, services),
  };
  const candidates = new Map<string, readonly Sourced[]>();
  for (const name of clusterNames) candidates.set(name, yield* candidateOutputs(name, ctx));
  book.absorb(problems);
  const emitted = yield* emitSteps({
    candidates,
    provenance,
    securitySources: [...security.keys()].sort(),
    previousSecurityOutputs: input.previousSecurityOutputs ?? new Map(),
    denyByDefault: denyByDefaultOf(security, model, indexByName, accessCtx),
    validator,
    lastingVerdicts: memo.verdicts(),
    book,
    problems,
    snapshot: (cluster, resources, prov) => memo.snapshot(cluster, resources, prov),
    previous: (cluster) => memo.last<ClusterEmit>('emit', cluster),
    record: (cluster, emitted) => void memo.keep('emit', cluster, emitted, () => false),
  });
  return {
    outputs: emitted.outputs,
    problems: problems.sorted(),
    statuses: book.statuses(memo),
    securityOutputs: emitted.securityOutputs,
    nameOwners: inventory.owners,
  };
}
