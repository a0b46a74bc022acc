/**
 * Selectors that match nothing are WARNINGs naming the selector: a `workspace:` that names no
 * workspace, a selector `cluster:` naming no known cluster, a WorkspaceSettings import/export
 * naming no workspace, a Workspace whose cluster list selects no known cluster. Such a selector
 * is accepted by the schema but silently does nothing, which is how careless scopes go unseen.
 */
import { formatResourceKey, isRecord, resourceKey, type Resource } from '@meshrelay/api';
import { isGlooResource } from '../gloo/input-validation.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { MANAGEMENT_CLUSTER, type ManagementWorkspace } from './workspace-outputs.ts';
import { glob, type WorkspaceModel, type WorkspaceSettingsSpec, type WorkspaceSpec } from './workspaces.ts';

interface Known {
  readonly workspaces: readonly string[];
  readonly clusters: readonly string[];
  readonly defined: boolean;
}

function noWorkspace(name: string, known: Known): string | undefined {
  if (known.workspaces.some((w) => glob(name, w))) return undefined;
  return known.defined
    ? `names no workspace (defined: ${known.workspaces.join(', ')})`
    : 'names no workspace (none is defined: every resource is in the implicit global workspace)';
}

/** Every `workspace` field of the spec, and every `cluster` of a `selector`, that matches nothing: `path: why`. */
function emptySelectors(value: unknown, path: string, inSelector: boolean, known: Known, out: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => emptySelectors(v, `${path}[${i}]`, inSelector, known, out));
    return;
  }
  if (!isRecord(value)) return;
  const workspace = value['workspace'];
  if (typeof workspace === 'string' && workspace !== '') {
    const why = noWorkspace(workspace, known);
    if (why) out.push(`${path}.workspace ${workspace} ${why}; the selector matches nothing`);
  }
  const cluster = value['cluster'];
  if (inSelector && typeof cluster === 'string' && cluster !== '' && !known.clusters.includes(cluster)) {
    out.push(`${path}.cluster ${cluster} names no known cluster; the selector matches nothing`);
  }
  for (const [key, child] of Object.entries(value))
    emptySelectors(child, `${path}.${key}`, inSelector || /selector$/i.test(key), known, out);
}

/** WorkspaceSettings importFrom/exportTo entries whose workspace names match no workspace. */
function emptyWorkspaceRefs(spec: WorkspaceSettingsSpec, known: Known, out: string[]): void {
  for (const field of ['importFrom', 'exportTo'] as const) {
    (spec[field] ?? []).forEach((sel, i) =>
      (sel.workspaces ?? []).forEach((w, j) => {
        if (w.name === undefined || w.name === '' || w.selector !== undefined) return;
        const why = noWorkspace(w.name, known);
        if (why) out.push(`spec.${field}[${i}].workspaces[${j}].name ${w.name} ${why}; the selector matches nothing`);
      }),
    );
  }
}

/** Reports, as WARNINGs on the resources that hold them, selectors that match nothing. */
export function reportEmptySelectors(
  perCluster: ReadonlyMap<string, readonly Resource[]>,
  workspaces: readonly Resource[],
  managed: readonly ManagementWorkspace[],
  model: WorkspaceModel,
  clusters: readonly string[],
  problems: ProblemSink,
): void {
  const known: Known = { workspaces: model.workspaces.map((w) => w.name), clusters, defined: model.defined };
  for (const [cluster, resources] of perCluster) {
    for (const r of resources) {
      if (!isGlooResource(r)) continue;
      const found: string[] = [];
      if (r.kind === 'WorkspaceSettings') emptyWorkspaceRefs((r.spec ?? {}) as WorkspaceSettingsSpec, known, found);
      emptySelectors(r.spec, 'spec', false, known, found);
      for (const reason of found) problems.add({ cluster, resource: formatResourceKey(resourceKey(r)), reason });
    }
  }
  const admitted = new Set(managed.map((w) => w.name));
  for (const ws of workspaces.filter((w) => admitted.has(w.metadata.name))) {
    ((ws.spec as WorkspaceSpec | undefined)?.workloadClusters ?? []).forEach((c, i) => {
      if (c.selector !== undefined && Object.keys(c.selector).length > 0) return;
      if (clusters.some((name) => glob(c.name, name))) return;
      const resource = formatResourceKey(resourceKey(ws));
      problems.add({
        cluster: MANAGEMENT_CLUSTER,
        resource,
        reason: `spec.workloadClusters[${i}].name ${c.name ?? '*'} names no known cluster; the selector matches nothing`,
      });
    });
  }
}
