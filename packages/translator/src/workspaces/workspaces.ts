/**
 * Gloo Workspaces. A Workspace (defined on the management plane) owns namespaces of clusters
 * (by cluster name glob or labels, namespace name glob); the WorkspaceSettings in one of its
 * namespaces say what it exports to and imports from other workspaces (by name or labels,
 * filtered by resource kind). A Gloo resource belongs to the workspace owning its cluster and
 * namespace; it sees its own workspace and what it imports from workspaces exporting to it.
 * With no Workspace defined there is one implicit workspace owning everything.
 */
import type { EastWestGatewaySelector } from '../gloo/cluster-index.ts';
import type { StringMap } from '../gloo/gloo-types.ts';
import type { Owned } from '../gloo/inventory.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { hasLabels, type Selectable } from '../gloo/selectors.ts';

export type ExportKind = 'ROUTE_TABLE' | 'SERVICE' | 'VIRTUAL_DESTINATION' | 'EXTERNAL_SERVICE';

export interface ClusterSelectorSpec {
  readonly name?: string;
  readonly selector?: StringMap;
  readonly namespaces?: readonly { readonly name?: string; readonly labels?: StringMap }[];
}

export interface WorkspaceSpec {
  readonly workloadClusters?: readonly ClusterSelectorSpec[];
}

export interface WorkspaceObjectSelector {
  readonly workspaces?: readonly { readonly name?: string; readonly selector?: StringMap }[];
  readonly resources?: readonly {
    readonly kind?: string;
    readonly labels?: StringMap;
    readonly name?: string;
    readonly namespace?: string;
    readonly cluster?: string;
  }[];
}

export interface WorkspaceSettingsSpec {
  readonly importFrom?: readonly WorkspaceObjectSelector[];
  readonly exportTo?: readonly WorkspaceObjectSelector[];
  readonly options?: {
    readonly serviceIsolation?: { readonly enabled?: boolean };
    readonly federation?: {
      readonly enabled?: boolean;
      readonly hostSuffix?: string;
      readonly serviceSelector?: readonly {
        readonly name?: string;
        readonly namespace?: string;
        readonly labels?: StringMap;
        readonly cluster?: string;
        readonly workspace?: string;
      }[];
      readonly ports?: readonly { readonly number?: number; readonly name?: string }[];
    };
    readonly eastWestGateways?: readonly EastWestGatewaySelector[];
  };
}

export interface WorkspaceInfo {
  readonly name: string;
  readonly labels: StringMap;
  readonly spec: WorkspaceSpec;
  readonly settings?: Owned<WorkspaceSettingsSpec>;
}

/** A name pattern where `*` matches any run of characters; empty or missing matches everything. */
export function glob(pattern: string | undefined, value: string): boolean {
  if (pattern === undefined || pattern === '' || pattern === '*') return true;
  const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
  return re.test(value);
}

export interface WorkspaceModel {
  /** False for the implicit global workspace (no Workspace defined). */
  readonly defined: boolean;
  /** The workspace owning a namespace of a cluster; '' for the implicit one; undefined when none does. */
  workspaceOf(cluster: string, namespace: string): string | undefined;
  /** Clusters with at least one namespace in the workspace. */
  clustersOf(workspace: string): readonly string[];
  /** Namespaces of `cluster` the workspace owns: names, or '*' when it owns every one (or a glob). */
  namespacesIn(workspace: string, cluster: string, known: readonly string[]): readonly string[] | '*';
  /** Whether a resource of kind `kind` (the `object`, when known) in workspace `from` is visible in workspace `to`. */
  visible(from: string, to: string, kind: ExportKind, object?: Selectable): boolean;
  /** Workspaces seeing `owner`'s resources of `kind` (the `object`, when known): itself and its importers. */
  recipients(owner: string, kind: ExportKind, object?: Selectable): readonly string[];
  readonly workspaces: readonly WorkspaceInfo[];
  /** The WorkspaceSettings of a workspace ('' = the implicit one), if any. */
  settingsOf(workspace: string): Owned<WorkspaceSettingsSpec> | undefined;
}

function selectsWorkspace(sel: WorkspaceObjectSelector, ws: WorkspaceInfo): boolean {
  const list = sel.workspaces ?? [];
  if (list.length === 0) return false;
  return list.some(
    (w) => (w.name === undefined || w.name === '' || glob(w.name, ws.name)) && hasLabels(ws.labels, w.selector),
  );
}

/**
 * Whether an export/import selector's resource filter lets `object` (of `kind`) through; unknown object: by kind only.
 */
function allows(sel: WorkspaceObjectSelector, kind: ExportKind, object: Selectable | undefined): boolean {
  const resources = sel.resources ?? [];
  if (resources.length === 0) return true;
  return resources.some((r) => {
    if ((r.kind ?? 'ALL') !== 'ALL' && r.kind !== kind) return false;
    if (!object) return true;
    if (r.name && r.name !== object.name) return false;
    if (r.namespace && r.namespace !== object.namespace) return false;
    if (r.cluster && r.cluster !== object.cluster) return false;
    return hasLabels(object.labels, r.labels);
  });
}

/** Builds the model; `clusterLabels` are the registry's labels of each known cluster. */
export function buildWorkspaceModel(
  workspaces: readonly { name: string; labels: StringMap; spec: WorkspaceSpec }[],
  settings: readonly Owned<WorkspaceSettingsSpec>[],
  clusterLabels: ReadonlyMap<string, StringMap>,
  problems: ProblemSink,
): WorkspaceModel {
  const sorted = [...workspaces].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const ownerCache = new Map<string, string | undefined>();
  const ownsCluster = (ws: { spec: WorkspaceSpec }, cluster: string): ClusterSelectorSpec[] =>
    (ws.spec.workloadClusters ?? []).filter(
      (c) => glob(c.name, cluster) && hasLabels(clusterLabels.get(cluster) ?? {}, c.selector),
    );
  const owns = (ws: { spec: WorkspaceSpec }, cluster: string, namespace: string): boolean =>
    ownsCluster(ws, cluster).some(
      (c) =>
        (c.namespaces ?? []).length === 0 ||
        (c.namespaces ?? []).some(
          (n) => glob(n.name, namespace) && (n.labels === undefined || Object.keys(n.labels).length === 0),
        ),
    );
  const workspaceOf = (cluster: string, namespace: string): string | undefined => {
    if (sorted.length === 0) return '';
    const key = `${cluster}/${namespace}`;
    if (ownerCache.has(key)) return ownerCache.get(key);
    const owners = sorted.filter((ws) => owns(ws, cluster, namespace));
    if (owners.length > 1)
      problems.add({
        reason: `namespace ${namespace} of cluster ${cluster} is claimed by workspaces ${owners.map((w) => w.name).join(', ')}; ${owners[0]?.name} owns it`,
      });
    ownerCache.set(key, owners[0]?.name);
    return owners[0]?.name;
  };
  const settingsOf = new Map<string, Owned<WorkspaceSettingsSpec>>();
  for (const s of settings) {
    const ws = workspaceOf(s.cluster, s.namespace);
    if (ws === undefined) continue;
    if (settingsOf.has(ws)) {
      problems.add({
        cluster: s.cluster,
        resource: `WorkspaceSettings ${s.namespace}/${s.name}`,
        reason: `workspace ${ws} already has WorkspaceSettings; these are ignored`,
      });
      continue;
    }
    settingsOf.set(ws, s);
  }
  const infos: WorkspaceInfo[] = sorted.map((w) => ({ ...w, settings: settingsOf.get(w.name) }));
  const byName = new Map(infos.map((w) => [w.name, w]));
  const visible = (from: string, to: string, kind: ExportKind, object?: Selectable): boolean => {
    if (from === to || sorted.length === 0) return true;
    const exporter = byName.get(from);
    const importer = byName.get(to);
    if (!exporter || !importer) return false;
    const exports = (exporter.settings?.spec.exportTo ?? []).some(
      (s) => selectsWorkspace(s, importer) && allows(s, kind, object),
    );
    const imports = (importer.settings?.spec.importFrom ?? []).some(
      (s) => selectsWorkspace(s, exporter) && allows(s, kind, object),
    );
    return exports && imports;
  };
  const clustersCache = new Map<string, readonly string[]>();
  const recipientsCache = new Map<string, readonly string[]>();
  return {
    defined: sorted.length > 0,
    workspaceOf,
    clustersOf: (workspace) => {
      let clusters = clustersCache.get(workspace);
      if (!clusters) {
        clusters = [...clusterLabels.keys()]
          .filter(
            (c) => sorted.length === 0 || sorted.some((ws) => ws.name === workspace && ownsCluster(ws, c).length > 0),
          )
          .sort();
        clustersCache.set(workspace, clusters);
      }
      return clusters;
    },
    namespacesIn: (workspace, cluster, known) => {
      const ws = byName.get(workspace);
      if (!ws) return '*';
      const selectors = ownsCluster(ws, cluster);
      if (
        selectors.some(
          (c) =>
            (c.namespaces ?? []).length === 0 ||
            (c.namespaces ?? []).some((n) => n.name === undefined || n.name === '*'),
        )
      )
        return '*';
      const explicit = selectors.flatMap((c) =>
        (c.namespaces ?? []).flatMap((n) => (n.name && !n.name.includes('*') ? [n.name] : [])),
      );
      return [...new Set([...explicit, ...known])].filter((ns) => workspaceOf(cluster, ns) === workspace).sort();
    },
    visible,
    recipients: (owner, kind, object) => {
      if (object)
        return sorted.length === 0
          ? ['']
          : infos.filter((w) => visible(owner, w.name, kind, object)).map((w) => w.name);
      const key = `${owner}\u0000${kind}`;
      let list = recipientsCache.get(key);
      if (!list) {
        list = sorted.length === 0 ? [''] : infos.filter((w) => visible(owner, w.name, kind)).map((w) => w.name);
        recipientsCache.set(key, list);
      }
      return list;
    },
    workspaces: infos,
    settingsOf: (workspace) => settingsOf.get(workspace),
  };
}
