import { isRecord, type Resource } from '@meshrelay/api';
import { CLUSTER_LABEL, NETWORK_LABEL, REGION_LABEL, SUBZONE_LABEL, ZONE_LABEL } from './names.ts';
import type { ServiceEndpoint, ServiceHost, ServicePort, XdsInput } from './types.ts';

type Labels = Record<string, string>;

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function labelsOf(v: unknown): Labels {
  const out: Labels = {};
  if (isRecord(v)) for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  return out;
}

function spec(r: Resource): Record<string, unknown> {
  return isRecord(r.spec) ? r.spec : {};
}

/**
 * The labels Istio matches subsets on: the workload's own, then the topology labels istiod
 * adds itself (labelutil.AugmentLabels). The cluster label is always the cluster whose
 * registry holds the endpoint — for a ServiceEntry that is the cluster it is applied in,
 * whatever the entry says — and the network label is kept when the workload set one.
 */
function augmentLabels(labels: Labels, cluster: string, locality: string, network: string | undefined): Labels {
  const out: Labels = { ...labels };
  const [region, zone, subZone] = locality.split('/');
  if (region) out[REGION_LABEL] = region;
  if (zone) out[ZONE_LABEL] = zone;
  if (subZone) out[SUBZONE_LABEL] = subZone;
  out[CLUSTER_LABEL] = cluster;
  if (network !== undefined && out[NETWORK_LABEL] === undefined) out[NETWORK_LABEL] = network;
  return out;
}

function sortedObject(labels: Labels): Labels {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Hosts of every ServiceEntry in the output, with their STATIC endpoints. */
function serviceEntryHosts(input: XdsInput, out: Map<string, ServiceHost>): void {
  for (const r of input.output) {
    if (r.kind !== 'ServiceEntry' || !r.apiVersion.startsWith('networking.istio.io/')) continue;
    const s = spec(r);
    const ports = Array.isArray(s['ports']) ? s['ports'].filter(isRecord) : [];
    const endpoints = Array.isArray(s['endpoints']) ? s['endpoints'].filter(isRecord) : [];
    const servicePorts: ServicePort[] = [];
    for (const p of ports) {
      const number = typeof p['number'] === 'number' ? p['number'] : undefined;
      if (number === undefined) continue;
      const name = str(p['name']) ?? '';
      const target = typeof p['targetPort'] === 'number' ? p['targetPort'] : number;
      const eps: ServiceEndpoint[] = [];
      for (const e of endpoints) {
        const address = str(e['address']);
        if (address === undefined) continue;
        const named = isRecord(e['ports']) ? e['ports'][name] : undefined;
        const locality = str(e['locality']) ?? '';
        eps.push({
          address,
          port: typeof named === 'number' ? named : target,
          labels: sortedObject(augmentLabels(labelsOf(e['labels']), input.cluster, locality, str(e['network']))),
          locality,
          weight: typeof e['weight'] === 'number' && e['weight'] > 0 ? e['weight'] : 1,
        });
      }
      servicePorts.push({ number, name, endpoints: eps });
    }
    const hosts = Array.isArray(s['hosts']) ? s['hosts'].filter((h): h is string => typeof h === 'string') : [];
    const sans = Array.isArray(s['subjectAltNames'])
      ? s['subjectAltNames'].filter((n): n is string => typeof n === 'string').sort()
      : [];
    for (const host of hosts) {
      if (host.includes('*') || out.has(host)) continue;
      out.set(host, {
        host,
        namespace: r.metadata.namespace ?? '',
        ports: servicePorts,
        ...(s['location'] === 'MESH_EXTERNAL' ? { external: true } : {}),
        ...(sans.length > 0 ? { subjectAltNames: sans } : {}),
      });
    }
  }
}

interface Discovered {
  readonly pods: Map<string, Resource>;
  readonly nodes: Map<string, Resource>;
  readonly slices: Map<string, Resource[]>;
}

function indexDiscovered(resources: readonly Resource[]): Discovered {
  const pods = new Map<string, Resource>();
  const nodes = new Map<string, Resource>();
  const slices = new Map<string, Resource[]>();
  for (const r of resources) {
    if (r.kind === 'Pod' && r.apiVersion === 'v1') pods.set(`${r.metadata.namespace ?? ''}/${r.metadata.name}`, r);
    else if (r.kind === 'Node' && r.apiVersion === 'v1') nodes.set(r.metadata.name, r);
    else if (r.kind === 'EndpointSlice' && r.apiVersion.startsWith('discovery.k8s.io/')) {
      const service = r.metadata.labels?.['kubernetes.io/service-name'];
      if (service === undefined) continue;
      const key = `${r.metadata.namespace ?? ''}/${service}`;
      slices.set(key, [...(slices.get(key) ?? []), r]);
    }
  }
  return { pods, nodes, slices };
}

/** `region/zone/subzone` of a Kubernetes endpoint, from its node's topology labels or the slice's zone. */
function k8sLocality(d: Discovered, endpoint: Record<string, unknown>): string {
  const node = d.nodes.get(str(endpoint['nodeName']) ?? '');
  const labels = node?.metadata.labels ?? {};
  const region = labels[REGION_LABEL] ?? '';
  const zone = labels[ZONE_LABEL] ?? str(endpoint['zone']) ?? '';
  const subZone = labels[SUBZONE_LABEL] ?? '';
  return [region, zone, subZone].join('/').replace(/\/+$/, '');
}

function sliceEndpoints(input: XdsInput, d: Discovered, slice: Resource, portName: string): ServiceEndpoint[] {
  const body = slice as unknown as Record<string, unknown>;
  const ports = Array.isArray(body['ports']) ? body['ports'].filter(isRecord) : [];
  const port =
    ports.find((p) => (str(p['name']) ?? '') === portName) ??
    (ports.length === 1 && portName === '' ? ports[0] : undefined);
  if (port === undefined || typeof port['port'] !== 'number') return [];
  const out: ServiceEndpoint[] = [];
  for (const e of Array.isArray(body['endpoints']) ? body['endpoints'].filter(isRecord) : []) {
    // Istio sends ready endpoints only (unready ones are for PublishNotReadyAddresses, not modelled).
    if (isRecord(e['conditions']) && e['conditions']['ready'] === false) continue;
    const ref = isRecord(e['targetRef']) ? e['targetRef'] : {};
    const pod =
      ref['kind'] === 'Pod'
        ? d.pods.get(`${str(ref['namespace']) ?? slice.metadata.namespace ?? ''}/${str(ref['name']) ?? ''}`)
        : undefined;
    const locality = k8sLocality(d, e);
    for (const address of Array.isArray(e['addresses'])
      ? e['addresses'].filter((a): a is string => typeof a === 'string')
      : []) {
      out.push({
        address,
        port: port['port'],
        labels: sortedObject(augmentLabels(labelsOf(pod?.metadata.labels), input.cluster, locality, input.network)),
        locality,
        weight: 1,
      });
    }
  }
  return out;
}

/** FQDNs of the cluster's own Kubernetes Services, with their EndpointSlices' ready endpoints. */
function kubernetesHosts(input: XdsInput, out: Map<string, ServiceHost>): void {
  const d = indexDiscovered(input.discovered);
  const domain = input.clusterDomain ?? 'cluster.local';
  for (const r of input.discovered) {
    if (r.kind !== 'Service' || r.apiVersion !== 'v1') continue;
    const ns = r.metadata.namespace ?? 'default';
    const host = `${r.metadata.name}.${ns}.svc.${domain}`;
    const slices = d.slices.get(`${ns}/${r.metadata.name}`) ?? [];
    const ports: ServicePort[] = [];
    for (const p of Array.isArray(spec(r)['ports']) ? (spec(r)['ports'] as unknown[]).filter(isRecord) : []) {
      if (typeof p['port'] !== 'number') continue;
      const name = str(p['name']) ?? '';
      ports.push({ number: p['port'], name, endpoints: slices.flatMap((s) => sliceEndpoints(input, d, s, name)) });
    }
    const sans = input.meshTls ? serviceAccountSans(d, slices, input.meshTls.trustDomain) : [];
    if (!out.has(host))
      out.set(host, { host, namespace: ns, ports, ...(sans.length > 0 ? { subjectAltNames: sans } : {}) });
  }
}

/** The SPIFFE ids of the Pods behind a Service's ready endpoints (Istio's service accounts of a service). */
function serviceAccountSans(d: Discovered, slices: readonly Resource[], trustDomain: string): string[] {
  const out = new Set<string>();
  for (const slice of slices) {
    const body = slice as unknown as Record<string, unknown>;
    for (const e of Array.isArray(body['endpoints']) ? body['endpoints'].filter(isRecord) : []) {
      if (isRecord(e['conditions']) && e['conditions']['ready'] === false) continue;
      const ref = isRecord(e['targetRef']) ? e['targetRef'] : {};
      const ns = str(ref['namespace']) ?? slice.metadata.namespace ?? '';
      const pod = ref['kind'] === 'Pod' ? d.pods.get(`${ns}/${str(ref['name']) ?? ''}`) : undefined;
      if (pod === undefined) continue;
      const sa = str(isRecord(pod['spec']) ? pod['spec']['serviceAccountName'] : undefined) ?? 'default';
      out.add(`spiffe://${trustDomain}/ns/${ns}/sa/${sa}`);
    }
  }
  return [...out].sort();
}

/**
 * Every host a proxy of this cluster can call, by host name. A ServiceEntry host wins over a
 * Kubernetes Service of the same name (the output is what Meshrelay delivers).
 */
export function collectServiceHosts(input: XdsInput): Map<string, ServiceHost> {
  const out = new Map<string, ServiceHost>();
  serviceEntryHosts(input, out);
  kubernetesHosts(input, out);
  return out;
}
