/**
 * Workspaces applied to a translation: which Gloo resources a workspace owns (the rest are
 * INVALID), which clusters each output goes to and the `exportTo` it carries there, and the
 * outputs of WorkspaceSettings serviceIsolation (strict mTLS + a DENY for every workload outside
 * the workspace and the workspaces importing its services).
 */
import { KINDS, deepFreeze, formatResourceKey, isKind, isRecord, resourceKey, type Resource } from '@meshrelay/api';
import type { ClusterIndex } from '../gloo/cluster-index.ts';
import { isGlooResource, validateInputResource } from '../gloo/input-validation.ts';
import { outputMetadata, outputName } from '../istio/names.ts';
import type { ProblemSink } from '../engine/problems.ts';
import type { Selectable } from '../gloo/selectors.ts';
import type { Sourced } from '../engine/sources.ts';
import type { StatusBook } from '../engine/status-book.ts';
import type { ClusterContext } from '../istio/service-entry.ts';
import type { ExportKind, WorkspaceModel, WorkspaceSpec } from './workspaces.ts';

/** Where management-plane resources (Workspaces) are said to live in source ids. */
export const MANAGEMENT_CLUSTER = 'management';

export interface ManagementWorkspace {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly spec: WorkspaceSpec;
}

/** Validates the management plane's Workspaces (each gets a status); returns the valid ones. */
export function admitWorkspaces(
  resources: readonly Resource[],
  book: StatusBook,
  problems: ProblemSink,
): ManagementWorkspace[] {
  const out: ManagementWorkspace[] = [];
  for (const r of resources) {
    if (!isRecord(r) || !isRecord(r.metadata) || typeof r.metadata.name !== 'string') {
      problems.add({
        cluster: MANAGEMENT_CLUSTER,
        reason: 'a Workspace without metadata.name is ignored',
        approval: 'INVALID',
      });
      continue;
    }
    book.register(MANAGEMENT_CLUSTER, r);
    const resource = formatResourceKey(resourceKey(r));
    const issues = isKind(r, KINDS.Workspace)
      ? validateInputResource(r)
      : [{ path: 'kind', message: 'only Workspaces are management-plane resources' }];
    if (issues.length > 0) {
      problems.add({
        cluster: MANAGEMENT_CLUSTER,
        resource,
        reason: `invalid Workspace ignored: ${issues.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
        approval: 'INVALID',
      });
      continue;
    }
    out.push({ name: r.metadata.name, labels: r.metadata.labels ?? {}, spec: (r.spec ?? {}) as WorkspaceSpec });
  }
  return out;
}

/**
 * Keeps the Gloo resources of namespaces some workspace owns; the others are INVALID (a
 * cluster affects only what its workspace owns). A Workspace in a cluster's input is INVALID:
 * workspaces are defined on the management plane.
 */
export function keepOwned(perCluster: Map<string, Resource[]>, model: WorkspaceModel, problems: ProblemSink): void {
  for (const [cluster, resources] of perCluster) {
    perCluster.set(
      cluster,
      resources.filter((r) => {
        if (!isGlooResource(r)) return true;
        const resource = formatResourceKey(resourceKey(r));
        if (isKind(r, KINDS.Workspace)) {
          problems.add({
            cluster,
            resource,
            reason: 'a Workspace is a management-plane resource (define it on the management server); ignored here',
            approval: 'INVALID',
          });
          return false;
        }
        if (model.workspaceOf(cluster, r.metadata.namespace ?? '') !== undefined) return true;
        problems.add({
          cluster,
          resource,
          reason: `namespace ${r.metadata.namespace ?? ''} of cluster ${cluster} belongs to no workspace; not translated`,
          approval: 'INVALID',
        });
        return false;
      }),
    );
  }
}

const EXPORT_KIND_OF: Readonly<Record<string, ExportKind>> = {
  VirtualDestination: 'VIRTUAL_DESTINATION',
  RouteTable: 'ROUTE_TABLE',
  ExternalService: 'EXTERNAL_SERVICE',
  ExternalEndpoint: 'EXTERNAL_SERVICE',
};
const WITH_EXPORT_TO = new Set([KINDS.ServiceEntry.kind, KINDS.DestinationRule.kind, KINDS.VirtualService.kind]);

/** Owner workspace of every source id (resources of the inventory). */
export type SourceWorkspaces = ReadonlyMap<string, string>;
/** The owning resource of every source id, for the export filters that name resources. */
export type SourceObjects = ReadonlyMap<string, Selectable>;

function exportTo(existing: unknown, namespaces: readonly string[] | '*', own: string): string[] {
  const current = Array.isArray(existing) ? (existing as string[]) : undefined;
  if (namespaces === '*') return current ?? ['*'];
  const allowed = [...new Set([...namespaces, own])].sort();
  return current ? current.filter((ns) => allowed.includes(ns)) : allowed;
}

/**
 * The candidates `consumer` receives: an output goes to the clusters of the workspace owning
 * its source and of the workspaces importing it, with `exportTo` naming their namespaces there.
 */
/**
 * Scoped copies by original and `exportTo`: clusters that get the same copy share one object,
 * so a shared output is still validated once (engine/emit.ts caches verdicts by object).
 */
/** exportTo-scoped copies by the output they copy and the exportTo list (kept as long as the output lives). */
export type ScopeCache = WeakMap<Resource, Map<string, Resource>>;

const frozenCopies = new WeakSet<Resource>();

/** Whether `r` is an exportTo-scoped copy made here: deep-frozen, so it can never change. */
export function isScopedCopy(r: Resource): boolean {
  return frozenCopies.has(r);
}

function withExportTo(resource: Resource, value: string[], cache: ScopeCache): Resource {
  const key = value.join(',');
  const copies = cache.get(resource) ?? new Map<string, Resource>();
  cache.set(resource, copies);
  let copy = copies.get(key);
  if (!copy) {
    copy = deepFreeze({
      ...resource,
      spec: { ...((resource.spec ?? {}) as Record<string, unknown>), exportTo: value },
    });
    frozenCopies.add(copy);
    copies.set(key, copy);
  }
  return copy;
}

export function scopeCandidates(
  list: readonly Sourced[],
  consumer: string,
  index: ClusterIndex | undefined,
  model: WorkspaceModel,
  owners: SourceWorkspaces,
  objects: SourceObjects,
  cache: ScopeCache,
): Sourced[] {
  const out: Sourced[] = [];
  for (const s of list) {
    const owner = s.sources[0] as string;
    const ws = owners.get(owner);
    if (ws === undefined) {
      out.push(s);
      continue;
    }
    const kind = EXPORT_KIND_OF[owner.split('/')[0] as string];
    const recipients = kind ? model.recipients(ws, kind, objects.get(owner)) : [ws];
    const here = recipients.filter((w) => model.clustersOf(w).includes(consumer));
    if (here.length === 0) continue;
    // A policy's outputs land only in namespaces its own workspace owns in this cluster.
    if (!kind && model.defined && model.workspaceOf(consumer, s.resource.metadata.namespace ?? '') !== ws) continue;
    if (!WITH_EXPORT_TO.has(s.resource.kind)) {
      out.push(s);
      continue;
    }
    const known = index?.namespaces ?? [];
    const lists = here.map((w) => model.namespacesIn(w, consumer, known));
    const namespaces = lists.includes('*') ? '*' : [...new Set(lists.flat() as string[])];
    const spec = (s.resource.spec ?? {}) as Record<string, unknown>;
    out.push({
      resource: withExportTo(
        s.resource,
        exportTo(spec['exportTo'], namespaces, s.resource.metadata.namespace ?? ''),
        cache,
      ),
      sources: s.sources,
    });
  }
  return out;
}

function isolationName(workspace: string): string {
  return outputName(workspace || 'global', 'isolation');
}

/**
 * serviceIsolation of `workspace` in `consumer`: in each namespace it owns there, STRICT mTLS
 * and a DENY for any caller whose identity is not in a namespace of the workspace or of a
 * workspace importing its services. A DENY, so it narrows AccessPolicies and never widens them.
 */
export function isolationOutputs(
  workspace: string,
  consumer: ClusterContext,
  indexes: ReadonlyMap<string, ClusterIndex>,
  model: WorkspaceModel,
  contexts: ReadonlyMap<string, ClusterContext>,
): Resource[] {
  const namespacesOf = (ws: string, cluster: string): readonly string[] => {
    const known = indexes.get(cluster)?.namespaces ?? [];
    const owned = model.namespacesIn(ws, cluster, known);
    // A workspace owning every namespace is spelled out namespace by namespace: a trust-domain
    // wildcard would also admit other workspaces sharing that trust domain.
    return owned === '*' ? known.filter((ns) => model.workspaceOf(cluster, ns) === ws) : owned;
  };
  const namespaces = namespacesOf(workspace, consumer.name);
  const callers = new Set([
    ...model.recipients(workspace, 'SERVICE'),
    ...model.recipients(workspace, 'VIRTUAL_DESTINATION'),
  ]);
  const allowed = new Set<string>();
  for (const ws of callers) {
    for (const cluster of model.clustersOf(ws)) {
      const trustDomain = contexts.get(cluster)?.trustDomain ?? 'cluster.local';
      for (const ns of namespacesOf(ws, cluster)) allowed.add(`${trustDomain}/ns/${ns}/sa/*`);
    }
  }
  const principals = [...allowed].sort();
  return namespaces.flatMap((ns) => [
    {
      apiVersion: KINDS.PeerAuthentication.apiVersion,
      kind: KINDS.PeerAuthentication.kind,
      metadata: outputMetadata(isolationName(workspace), ns),
      spec: { mtls: { mode: 'STRICT' } },
    },
    {
      apiVersion: KINDS.AuthorizationPolicy.apiVersion,
      kind: KINDS.AuthorizationPolicy.kind,
      metadata: outputMetadata(isolationName(workspace), ns),
      spec: { action: 'DENY', rules: [{ from: [{ source: { notPrincipals: principals } }] }] },
    },
  ]);
}

/** Fail closed for WorkspaceSettings that cannot be translated: allow nothing in the namespaces of its workspace. */
export function isolationDeny(
  workspace: string,
  consumer: string,
  index: ClusterIndex | undefined,
  model: WorkspaceModel,
): Resource[] {
  const known = index?.namespaces ?? [];
  const owned = model.namespacesIn(workspace, consumer, known);
  return (owned === '*' ? known : owned).map((ns) => ({
    apiVersion: KINDS.AuthorizationPolicy.apiVersion,
    kind: KINDS.AuthorizationPolicy.kind,
    metadata: outputMetadata(isolationName(workspace), ns),
    spec: {},
  }));
}
