/**
 * Per-cluster index of the discovered Kubernetes objects, built once per translation so
 * that every lookup the translator makes is a map access rather than a scan.
 */
import { isIP } from 'node:net';
import { parse } from 'yaml';
import { KINDS, isKind, isMeshConfigMap, isRecord, type Resource } from '@meshrelay/api';
import type { StringMap } from './gloo-types.ts';

export interface ServicePort {
  readonly name: string;
  readonly port: number;
  readonly targetPort?: number | string;
}

export interface ServiceInfo {
  readonly cluster: string;
  /** The workspace owning its namespace in its cluster ('' = the implicit one; undefined = none). */
  readonly workspace?: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: StringMap;
  readonly selector?: StringMap;
  readonly ports: readonly ServicePort[];
}

/** A ready endpoint of a Service with its ports by port name and where it runs. */
export interface ServiceEndpoint {
  readonly address: string;
  readonly ports: ReadonlyMap<string, number>;
  readonly podKey?: string;
  readonly nodeName?: string;
}

export interface PodInfo {
  readonly labels: StringMap;
  readonly nodeName?: string;
  readonly serviceAccount?: string;
}

export interface EastWestGateway {
  readonly address: string;
  readonly port: number;
}

export interface ClusterIndex {
  readonly cluster: string;
  /** Services sorted by (namespace, name). */
  readonly services: readonly ServiceInfo[];
  readonly serviceByKey: ReadonlyMap<string, ServiceInfo>;
  readonly pods: ReadonlyMap<string, PodInfo>;
  /** Namespaces in which Services or Pods were discovered, sorted. */
  readonly namespaces: readonly string[];
  readonly nodeLabels: ReadonlyMap<string, StringMap>;
  readonly eastWestGateway?: EastWestGateway;
  /** The east-west gateway a WorkspaceSettings `eastWestGateways` list selects in this cluster, if any. */
  eastWestGatewayFor(selectors: readonly EastWestGatewaySelector[]): EastWestGateway | undefined;
  /** meshConfig.trustDomain from the cluster's Istio mesh config ConfigMap, when it sets one. */
  readonly trustDomain?: string;
  /** Ready endpoints of a Service (`ns/name`), from its EndpointSlices or else its Endpoints. */
  endpointsOf(serviceKey: string): readonly ServiceEndpoint[];
  /**
   * A view of this index that `build` derives from it (an index by label, by service account…),
   * built on first use and kept with the index: one per builder function, so a module passes
   * the same function every time. The index is immutable, so a view never goes stale.
   */
  derived<T>(build: (index: ClusterIndex) => T): T;
}

export const EAST_WEST_GATEWAY_LABEL = { key: 'istio', value: 'eastwestgateway' } as const;
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const DEFAULT_TLS_PORT = 15443;

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function list(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function toService(cluster: string, r: Resource, workspaceOf: WorkspaceOf): ServiceInfo {
  const spec = record(r.spec);
  const ports = list(spec['ports']).map((p) => {
    const targetPort = p['targetPort'];
    return {
      name: str(p['name']) ?? '',
      port: p['port'] as number,
      targetPort: typeof targetPort === 'number' || typeof targetPort === 'string' ? targetPort : undefined,
    };
  });
  const workspace = workspaceOf(cluster, r.metadata.namespace ?? '');
  return {
    cluster,
    ...(workspace === undefined ? {} : { workspace }),
    namespace: r.metadata.namespace ?? '',
    name: r.metadata.name,
    labels: r.metadata.labels ?? {},
    selector: isRecord(spec['selector']) ? (spec['selector'] as StringMap) : undefined,
    ports,
  };
}

function podKeyOf(targetRef: unknown, fallbackNamespace: string): string | undefined {
  const ref = record(targetRef);
  if (ref['kind'] !== 'Pod' || typeof ref['name'] !== 'string') return undefined;
  return objectKey(str(ref['namespace']) ?? fallbackNamespace, ref['name']);
}

function sliceEndpoints(slice: Resource): ServiceEndpoint[] {
  const body = slice as unknown as Record<string, unknown>;
  if (body['addressType'] === 'FQDN') return [];
  const ports = new Map<string, number>();
  for (const p of list(body['ports'])) if (typeof p['port'] === 'number') ports.set(str(p['name']) ?? '', p['port']);
  const namespace = slice.metadata.namespace ?? '';
  const out: ServiceEndpoint[] = [];
  for (const ep of list(body['endpoints'])) {
    if (record(ep['conditions'])['ready'] === false) continue;
    const address = str((ep['addresses'] as unknown[] | undefined)?.[0]);
    if (address === undefined || isIP(address) === 0) continue;
    out.push({ address, ports, podKey: podKeyOf(ep['targetRef'], namespace), nodeName: str(ep['nodeName']) });
  }
  return out;
}

function legacyEndpoints(endpoints: Resource): ServiceEndpoint[] {
  const namespace = endpoints.metadata.namespace ?? '';
  const out: ServiceEndpoint[] = [];
  for (const subset of list((endpoints as unknown as Record<string, unknown>)['subsets'])) {
    const ports = new Map<string, number>();
    for (const p of list(subset['ports']))
      if (typeof p['port'] === 'number') ports.set(str(p['name']) ?? '', p['port']);
    for (const a of list(subset['addresses'])) {
      const address = str(a['ip']);
      if (address === undefined) continue;
      out.push({ address, ports, podKey: podKeyOf(a['targetRef'], namespace), nodeName: str(a['nodeName']) });
    }
  }
  return out;
}

function dedupeByAddress(endpoints: ServiceEndpoint[]): ServiceEndpoint[] {
  const seen = new Map<string, ServiceEndpoint>();
  for (const ep of endpoints) if (!seen.has(ep.address)) seen.set(ep.address, ep);
  return [...seen.values()].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/** WorkspaceSettings options.eastWestGateways[]: the gateway Service by selector, its port, address overrides. */
export interface EastWestGatewaySelector {
  readonly selector?: {
    readonly labels?: StringMap;
    readonly namespace?: string;
    readonly cluster?: string;
    readonly name?: string;
  };
  readonly port?: { readonly number?: number; readonly name?: string };
  readonly hostInfoOverrides?: readonly { readonly addr?: string; readonly port?: number }[];
}

function gatewayOfService(
  r: Resource,
  port?: EastWestGatewaySelector['port'],
  override?: { readonly addr?: string; readonly port?: number },
): EastWestGateway | undefined {
  const ingress = list(record(record(r.status)['loadBalancer'])['ingress'])[0] ?? {};
  const spec = record(r.spec);
  const externalIp = Array.isArray(spec['externalIPs']) ? str(spec['externalIPs'][0]) : undefined;
  const address = override?.addr || str(ingress['ip']) || str(ingress['hostname']) || externalIp;
  if (address === undefined || address === '') return undefined;
  const ports = list(spec['ports']);
  const chosen =
    port?.number !== undefined
      ? ports.find((p) => p['port'] === port.number)
      : port?.name !== undefined
        ? ports.find((p) => p['name'] === port.name)
        : (ports.find((p) => p['name'] === 'tls') ?? ports.find((p) => p['port'] === DEFAULT_TLS_PORT));
  const number =
    override?.port || (typeof chosen?.['port'] === 'number' ? chosen['port'] : (port?.number ?? DEFAULT_TLS_PORT));
  return { address, port: number };
}

/**
 * Picks the east-west gateway a cluster declares: the first Service labelled istio=eastwestgateway that has an address.
 */
function findEastWestGateway(services: readonly Resource[]): EastWestGateway | undefined {
  for (const r of services) {
    if (r.metadata.labels?.[EAST_WEST_GATEWAY_LABEL.key] !== EAST_WEST_GATEWAY_LABEL.value) continue;
    const gateway = gatewayOfService(r);
    if (gateway) return gateway;
  }
  return undefined;
}

/** The first Service (in sorted order) that a selector of the list matches in `cluster` and that has an address. */
function selectEastWestGateway(
  cluster: string,
  services: readonly Resource[],
  selectors: readonly EastWestGatewaySelector[],
): EastWestGateway | undefined {
  for (const sel of selectors) {
    const s = sel.selector ?? {};
    if (s.cluster && s.cluster !== cluster) continue;
    for (const r of services) {
      if (s.namespace && s.namespace !== r.metadata.namespace) continue;
      if (s.name && s.name !== r.metadata.name) continue;
      if (!Object.entries(s.labels ?? {}).every(([k, v]) => r.metadata.labels?.[k] === v)) continue;
      const gateway = gatewayOfService(r, sel.port, sel.hostInfoOverrides?.[0]);
      if (gateway) return gateway;
    }
  }
  return undefined;
}

/** The trust domain Istio's mesh config sets (`istio` before `istio-<revision>`), if any. Never throws. */
function meshTrustDomain(configMaps: readonly Resource[]): string | undefined {
  for (const cm of [...configMaps].sort((a, b) =>
    a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
  )) {
    const mesh = record(cm['data'])['mesh'];
    if (typeof mesh !== 'string') continue;
    let parsed: unknown;
    try {
      parsed = parse(mesh);
    } catch {
      continue;
    }
    const trustDomain = record(parsed)['trustDomain'];
    if (typeof trustDomain === 'string' && trustDomain !== '') return trustDomain;
  }
  return undefined;
}

/** Builds the index of one cluster's discovered objects. `resources` must already be validated. */
export type WorkspaceOf = (cluster: string, namespace: string) => string | undefined;

export function indexCluster(
  cluster: string,
  resources: readonly Resource[],
  workspaceOf: WorkspaceOf = () => '',
): ClusterIndex {
  const serviceResources: Resource[] = [];
  const slicesByService = new Map<string, Resource[]>();
  const endpointsByKey = new Map<string, Resource>();
  const pods = new Map<string, PodInfo>();
  const nodeLabels = new Map<string, StringMap>();
  const meshConfigs: Resource[] = [];
  const podNamespaces = new Set<string>();
  for (const r of resources) {
    if (isMeshConfigMap(r)) meshConfigs.push(r);
    const ns = r.metadata.namespace ?? '';
    if (isKind(r, KINDS.Service)) serviceResources.push(r);
    else if (isKind(r, KINDS.EndpointSlice)) {
      const owner = r.metadata.labels?.[SERVICE_NAME_LABEL];
      if (owner === undefined) continue;
      const key = objectKey(ns, owner);
      const slices = slicesByService.get(key) ?? [];
      slices.push(r);
      slicesByService.set(key, slices);
    } else if (isKind(r, KINDS.Endpoints)) endpointsByKey.set(objectKey(ns, r.metadata.name), r);
    else if (isKind(r, KINDS.Pod)) {
      const spec = record(r.spec);
      pods.set(objectKey(ns, r.metadata.name), {
        labels: r.metadata.labels ?? {},
        nodeName: str(spec['nodeName']),
        serviceAccount: str(spec['serviceAccountName']),
      });
      podNamespaces.add(ns);
    } else if (isKind(r, KINDS.Node)) nodeLabels.set(r.metadata.name, r.metadata.labels ?? {});
  }
  const sortedServices = [...serviceResources].sort((a, b) => compareKeys(meta(a), meta(b)));
  const services = serviceResources.map((r) => toService(cluster, r, workspaceOf)).sort((a, b) => compareKeys(a, b));
  const serviceByKey = new Map(services.map((s) => [objectKey(s.namespace, s.name), s]));
  const endpointCache = new Map<string, readonly ServiceEndpoint[]>();
  const views = new Map<(index: ClusterIndex) => unknown, unknown>();
  const index: ClusterIndex = {
    cluster,
    services,
    serviceByKey,
    pods,
    namespaces: [...new Set([...services.map((s) => s.namespace), ...podNamespaces])].sort(),
    nodeLabels,
    eastWestGateway: findEastWestGateway(sortedServices),
    eastWestGatewayFor: (selectors) => selectEastWestGateway(cluster, sortedServices, selectors),
    ...(() => {
      const trustDomain = meshTrustDomain(meshConfigs);
      return trustDomain === undefined ? {} : { trustDomain };
    })(),
    endpointsOf(serviceKey: string): readonly ServiceEndpoint[] {
      let cached = endpointCache.get(serviceKey);
      if (!cached) {
        const slices = slicesByService.get(serviceKey);
        const legacy = endpointsByKey.get(serviceKey);
        cached = dedupeByAddress(slices ? slices.flatMap(sliceEndpoints) : legacy ? legacyEndpoints(legacy) : []);
        endpointCache.set(serviceKey, cached);
      }
      return cached;
    },
    derived<T>(build: (index: ClusterIndex) => T): T {
      if (!views.has(build)) views.set(build, build(index));
      return views.get(build) as T;
    },
  };
  return index;
}

function meta(r: Resource): { namespace: string; name: string } {
  return { namespace: r.metadata.namespace ?? '', name: r.metadata.name };
}

function compareKeys(a: { namespace: string; name: string }, b: { namespace: string; name: string }): number {
  const ka = objectKey(a.namespace, a.name);
  const kb = objectKey(b.namespace, b.name);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
