/**
 * Resolves each VirtualDestination to its backing Services and their ready endpoints in
 * every cluster, with the locality and labels Istio needs. Consumer-independent: which
 * endpoints a given cluster reaches directly or through a gateway is decided later.
 */
import type { ClusterIndex, ServiceEndpoint, ServiceInfo, ServicePort } from './cluster-index.ts';
import { objectKey } from './cluster-index.ts';
import type { ObjectSelector, StringMap, VirtualDestinationPort, VirtualDestinationSpec } from './gloo-types.ts';
import { describeOwned, type Owned } from './inventory.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { matchesObjectSelector } from './selectors.ts';
import type { WorkspaceModel } from '../workspaces/workspaces.ts';

export const CLUSTER_LABEL = 'topology.istio.io/cluster';
const REGION_LABEL = 'topology.kubernetes.io/region';
const ZONE_LABEL = 'topology.kubernetes.io/zone';
const SUBZONE_LABEL = 'topology.istio.io/subzone';

export interface DestinationPort {
  /** Port name in the ServiceEntry and in each endpoint's `ports` map. */
  readonly name: string;
  readonly number: number;
  readonly protocol: string;
}

export interface BackingEndpoint {
  readonly address: string;
  /** Endpoint port by DestinationPort name. */
  readonly ports: Readonly<Record<string, number>>;
  readonly locality?: string;
  readonly labels: StringMap;
}

export interface Backend {
  readonly cluster: string;
  readonly service: ServiceInfo;
  readonly endpoints: readonly BackingEndpoint[];
}

export interface VirtualDestinationModel {
  readonly owned: Owned<VirtualDestinationSpec>;
  /** `<namespace>/<name>`: the VIP allocation key. */
  readonly key: string;
  readonly hosts: readonly string[];
  readonly ports: readonly DestinationPort[];
  /** Sorted by cluster. */
  readonly backends: readonly Backend[];
}

export function destinationPortName(port: VirtualDestinationPort): string {
  return `${port.protocol.toLowerCase()}-${port.number}`;
}

/** The Service port a VirtualDestination port maps to (by targetPort name or number, else by its own number). */
function findServicePort(service: ServiceInfo, port: VirtualDestinationPort): ServicePort | undefined {
  const target = port.targetPort;
  if (target?.name !== undefined) return service.ports.find((p) => p.name === target.name);
  const number = target?.number ?? port.number;
  return service.ports.find((p) => p.port === number);
}

/**
 * The port an endpoint listens on for a Service port: the EndpointSlice port of the same name, else a numeric
 * targetPort.
 */
function endpointPort(endpoint: ServiceEndpoint, servicePort: ServicePort): number | undefined {
  const named = endpoint.ports.get(servicePort.name);
  if (named !== undefined) return named;
  if (typeof servicePort.targetPort === 'number') return servicePort.targetPort;
  return servicePort.targetPort === undefined ? servicePort.port : undefined;
}

/** "region/zone/subzone" from the endpoint's Node labels, else from its Pod's labels. */
export function localityOf(index: ClusterIndex, endpoint: ServiceEndpoint): string | undefined {
  const pod = endpoint.podKey === undefined ? undefined : index.pods.get(endpoint.podKey);
  const nodeName = endpoint.nodeName ?? pod?.nodeName;
  const node = nodeName === undefined ? undefined : index.nodeLabels.get(nodeName);
  const source = node?.[REGION_LABEL] !== undefined ? node : pod?.labels;
  const region = source?.[REGION_LABEL];
  if (region === undefined || region === '') return undefined;
  const parts = [region, source?.[ZONE_LABEL], source?.[SUBZONE_LABEL]];
  const last = parts.findLastIndex((p) => p !== undefined && p !== '');
  return parts
    .slice(0, last + 1)
    .map((p) => p ?? '')
    .join('/');
}

function backingEndpoints(
  index: ClusterIndex,
  service: ServiceInfo,
  ports: readonly { dest: DestinationPort; svc: ServicePort }[],
): BackingEndpoint[] {
  const out: BackingEndpoint[] = [];
  for (const endpoint of index.endpointsOf(objectKey(service.namespace, service.name))) {
    const mapped: Record<string, number> = {};
    let complete = true;
    for (const { dest, svc } of ports) {
      const number = endpointPort(endpoint, svc);
      if (number === undefined) complete = false;
      else mapped[dest.name] = number;
    }
    if (!complete) continue;
    const pod = endpoint.podKey === undefined ? undefined : index.pods.get(endpoint.podKey);
    out.push({
      address: endpoint.address,
      ports: mapped,
      locality: localityOf(index, endpoint),
      labels: { ...(pod?.labels ?? {}), [CLUSTER_LABEL]: index.cluster },
    });
  }
  return out;
}

/** Per cluster index: its Services by `label=value`, and each Service's position in `services`. */
interface LabelIndex {
  readonly byLabel: Map<string, ServiceInfo[]>;
  readonly position: Map<ServiceInfo, number>;
}

function buildLabelIndex(index: ClusterIndex): LabelIndex {
  const built: LabelIndex = { byLabel: new Map(), position: new Map() };
  for (const [i, svc] of index.services.entries()) {
    built.position.set(svc, i);
    for (const [key, value] of Object.entries(svc.labels)) {
      const id = `${key}=${value}`;
      const list = built.byLabel.get(id) ?? [];
      list.push(svc);
      built.byLabel.set(id, list);
    }
  }
  return built;
}

function labelIndexOf(index: ClusterIndex): LabelIndex {
  return index.derived(buildLabelIndex);
}

/**
 * The Services that may match one of `selectors`, in `index.services` order: by the first
 * label of a selector through the label index, all Services for a selector without labels.
 * A superset of the matches; the caller still applies each selector in full.
 */
export function selectorCandidates(index: ClusterIndex, selectors: readonly ObjectSelector[]): readonly ServiceInfo[] {
  if (index.services.length === 0) return index.services;
  const { byLabel, position } = labelIndexOf(index);
  const found = new Set<ServiceInfo>();
  for (const sel of selectors) {
    const first = Object.entries(sel.labels ?? {})[0];
    if (!first) return index.services;
    for (const svc of byLabel.get(`${first[0]}=${first[1]}`) ?? []) found.add(svc);
  }
  return [...found].sort((a, b) => (position.get(a) as number) - (position.get(b) as number));
}

/** The backing Service of `vd` in one cluster, or undefined; more than one is an error (as in Gloo). */
function selectService(
  vd: Owned<VirtualDestinationSpec>,
  index: ClusterIndex,
  problems: ProblemSink,
  workspaces: WorkspaceModel | undefined,
): ServiceInfo | undefined | 'conflict' {
  const visible = (s: ServiceInfo): boolean =>
    !workspaces || (s.workspace !== undefined && workspaces.visible(s.workspace, vd.workspace, 'SERVICE', s));
  const selected = selectorCandidates(index, vd.spec.services ?? []).filter(
    (s) => visible(s) && (vd.spec.services ?? []).some((sel) => matchesObjectSelector(sel, s)),
  );
  if (selected.length > 1) {
    const names = selected.map((s) => objectKey(s.namespace, s.name)).join(', ');
    problems.add({
      cluster: vd.cluster,
      resource: describeOwned(vd),
      reason: `selects more than one Service in cluster ${index.cluster} (${names}); not translated`,
      approval: 'INVALID',
    });
    return 'conflict';
  }
  return selected[0];
}

/** The backend of `vd` in one cluster; `'conflict'` when it selects several Services there. */
export type BackendResolution = Backend | undefined | 'conflict';

/** Resolves the backend of `vd` in `index`'s cluster, reporting a conflict or a missing port. */
export function resolveBackend(
  vd: Owned<VirtualDestinationSpec>,
  index: ClusterIndex,
  problems: ProblemSink,
  workspaces?: WorkspaceModel,
): BackendResolution {
  const service = selectService(vd, index, problems, workspaces);
  if (service === undefined || service === 'conflict') return service;
  const ports = vd.spec.ports.map((p) => ({ name: destinationPortName(p), number: p.number, protocol: p.protocol }));
  const bound = vd.spec.ports.map((p, i) => ({ dest: ports[i] as DestinationPort, svc: findServicePort(service, p) }));
  const missing = bound.find((b) => b.svc === undefined);
  if (missing) {
    problems.add({
      cluster: vd.cluster,
      resource: describeOwned(vd),
      reason: `backing Service ${objectKey(service.namespace, service.name)} in cluster ${index.cluster} has no port matching ${missing.dest.name}; skipped`,
    });
    return undefined;
  }
  return {
    cluster: index.cluster,
    service,
    endpoints: backingEndpoints(index, service, bound as { dest: DestinationPort; svc: ServicePort }[]),
  };
}

/**
 * Resolves one VirtualDestination over every cluster (`backendOf` resolves one cluster; an
 * incremental engine passes a cached one). Undefined when it selects several Services in a
 * cluster (reported by the backend resolution).
 */
export function resolveVirtualDestination(
  vd: Owned<VirtualDestinationSpec>,
  indexes: readonly ClusterIndex[],
  problems: ProblemSink,
  workspaces?: WorkspaceModel,
  backendOf: (
    vd: Owned<VirtualDestinationSpec>,
    index: ClusterIndex,
    problems: ProblemSink,
    workspaces?: WorkspaceModel,
  ) => BackendResolution = resolveBackend,
): VirtualDestinationModel | undefined {
  const backends: Backend[] = [];
  let conflict = false;
  for (const index of indexes) {
    const backend = backendOf(vd, index, problems, workspaces);
    if (backend === 'conflict') conflict = true;
    else if (backend !== undefined) backends.push(backend);
  }
  if (conflict) return undefined;
  const ports = vd.spec.ports.map((p) => ({ name: destinationPortName(p), number: p.number, protocol: p.protocol }));
  return { owned: vd, key: objectKey(vd.namespace, vd.name), hosts: vd.spec.hosts, ports, backends };
}

/**
 * Resolves every VirtualDestination. One that selects several Services in a cluster is
 * reported and left out; a backing Service that lacks one of the destination's ports is
 * reported and skipped.
 */
export function resolveVirtualDestinations(
  vds: readonly Owned<VirtualDestinationSpec>[],
  indexes: readonly ClusterIndex[],
  problems: ProblemSink,
  workspaces?: WorkspaceModel,
): VirtualDestinationModel[] {
  return vds.flatMap((vd) => resolveVirtualDestination(vd, indexes, problems, workspaces) ?? []);
}
