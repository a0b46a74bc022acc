/**
 * Deterministic benchmark workloads: per-cluster input snapshots shaped like what the
 * Kubernetes discovery provider sends (Nodes, Services, EndpointSlices, Pods, an east-west
 * gateway) plus the Gloo resources that export a share of the services across clusters.
 * Every "random" choice (pod-name suffixes, node placement) comes from a seeded generator,
 * so the same shape and seed give the same input hashes on every machine.
 */
import {
  KINDS,
  MeshrelayError,
  buildInputSnapshot,
  normalizeResource,
  sha256Hex,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import type { ClusterInfo } from '@meshrelay/translator';

export interface WorkloadShape {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  readonly endpointsPerService: number;
  readonly nodesPerCluster: number;
  /** Every `exportEvery`-th service (svc-000, svc-010, ...) gets a VirtualDestination. */
  readonly exportEvery: number;
  readonly seed: number;
}

/** Tier S: 10 clusters × 100 services × 5 endpoints, 10 % of services exported. */
export const TIER_S: WorkloadShape = Object.freeze({
  clusters: 10,
  servicesPerCluster: 100,
  endpointsPerService: 5,
  nodesPerCluster: 3,
  exportEvery: 10,
  seed: 0x5eed,
});

/** Tier M: 50 clusters × 1,000 services × 10 endpoints (603 k input resources). */
export const TIER_M: WorkloadShape = Object.freeze({
  ...TIER_S,
  clusters: 50,
  servicesPerCluster: 1000,
  endpointsPerService: 10,
  nodesPerCluster: 50,
});

/**
 * Tier L: 200 clusters × 1,000 services × 20 endpoints; 128 Nodes keep each node's /24 under 254 pods (with 100, a
 * random placement put 255 on one).
 */
export const TIER_L: WorkloadShape = Object.freeze({
  ...TIER_S,
  clusters: 200,
  servicesPerCluster: 1000,
  endpointsPerService: 20,
  nodesPerCluster: 128,
});

export const TIERS: Readonly<Record<string, WorkloadShape>> = Object.freeze({ S: TIER_S, M: TIER_M, L: TIER_L });

/**
 * Pod ranges: cluster c < 155 owns 10.(100+c).0.0/16 (the original plan, so tier S and M hashes
 * stay as they were); clusters 155…218 own 100.(64+c-155).0.0/16 (shared address space, unused
 * by the rest of the workload). Gateway addresses 203.0.113.(c+10) fit up to cluster 245.
 */
export const MAX_CLUSTERS = 219;
const FIRST_PLAN_CLUSTERS = 155;

function podRangePrefix(c: number): string {
  return c < FIRST_PLAN_CLUSTERS ? `10.${100 + c}` : `100.${64 + c - FIRST_PLAN_CLUSTERS}`;
}

export interface WorkloadCounts {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  readonly endpointsPerService: number;
  readonly nodesPerCluster: number;
  /** Distinct regions over all clusters (each cluster's Nodes are in one region, one zone per Node). */
  readonly regions: number;
  /** Namespaces the services are spread over. */
  readonly namespaces: number;
  readonly exportedServices: number;
  readonly virtualDestinations: number;
  readonly inputResources: number;
  /** Total canonical bytes of all input snapshots. */
  readonly inputBytes: number;
  /** Input resources over all clusters, by kind. */
  readonly inputsByKind: Readonly<Record<string, number>>;
  /** sha256 over the clusters' input hashes in cluster order: identifies the workload. */
  readonly inputDigest: string;
}

export interface Workload {
  readonly shape: WorkloadShape;
  readonly inputs: Map<string, InputSnapshot>;
  readonly clusters: ClusterInfo[];
  readonly counts: WorkloadCounts;
}

const NAMESPACES = ['shop', 'payments', 'catalog', 'identity'] as const;
const REGIONS = ['us-east', 'us-west', 'eu-west'] as const;
const SERVICE_PORT = 8080;
const GATEWAY_NAMESPACE = 'istio-gateways';
const EPOCH = 'bench-epoch';
/** The alphabet Kubernetes uses for generated name suffixes (no vowels, no look-alikes). */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** mulberry32: a small, fast, seedable PRNG; returns floats in [0, 1). */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function suffix(random: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += NAME_ALPHABET[Math.floor(random() * NAME_ALPHABET.length)];
  return out;
}

export function serviceName(index: number): string {
  return `svc-${String(index).padStart(3, '0')}`;
}

export function serviceNamespace(index: number): string {
  return NAMESPACES[index % NAMESPACES.length] as string;
}

export function clusterName(index: number): string {
  return `cluster-${index}`;
}

function regionOf(clusterIndex: number): string {
  return REGIONS[clusterIndex % REGIONS.length] as string;
}

function isExported(shape: WorkloadShape, serviceIndex: number): boolean {
  return serviceIndex % shape.exportEvery === 0;
}

function nodes(shape: WorkloadShape, c: number): Resource[] {
  const region = regionOf(c);
  return Array.from({ length: shape.nodesPerCluster }, (_, n) => ({
    apiVersion: KINDS.Node.apiVersion,
    kind: KINDS.Node.kind,
    metadata: {
      name: `node-c${c}-${n}`,
      labels: {
        'kubernetes.io/hostname': `node-c${c}-${n}`,
        'topology.kubernetes.io/region': region,
        'topology.kubernetes.io/zone': `${region}-1${String.fromCharCode(97 + (n % 26))}`,
      },
    },
  }));
}

function eastWestGateway(c: number): Resource {
  return {
    apiVersion: KINDS.Service.apiVersion,
    kind: KINDS.Service.kind,
    metadata: { name: 'istio-eastwestgateway', namespace: GATEWAY_NAMESPACE, labels: { istio: 'eastwestgateway' } },
    spec: {
      type: 'LoadBalancer',
      selector: { istio: 'eastwestgateway' },
      ports: [
        { name: 'status-port', port: 15021, targetPort: 15021, protocol: 'TCP' },
        { name: 'tls', port: 15443, targetPort: 15443, protocol: 'TCP' },
      ],
    },
    status: { loadBalancer: { ingress: [{ ip: `203.0.113.${c + 10}` }] } },
  };
}

interface PodPlacement {
  readonly name: string;
  readonly node: string;
  readonly ip: string;
}

/** One Service, its EndpointSlice and its Pods in cluster `c`; `nextIp` hands out pod IPs per node. */
function service(
  shape: WorkloadShape,
  c: number,
  s: number,
  random: () => number,
  nextIp: (node: number) => string,
): Resource[] {
  const name = serviceName(s);
  const namespace = serviceNamespace(s);
  const labels = { app: name };
  const replicaSet = `${name}-${suffix(random, 10)}`;
  const taken = new Set<string>();
  const pods: PodPlacement[] = Array.from({ length: shape.endpointsPerService }, () => {
    const node = Math.floor(random() * shape.nodesPerCluster);
    // Kubernetes retries a generated name that is taken; so does the generator (deterministically).
    let podName = `${replicaSet}-${suffix(random, 5)}`;
    while (taken.has(podName)) podName = `${replicaSet}-${suffix(random, 5)}`;
    taken.add(podName);
    return { name: podName, node: `node-c${c}-${node}`, ip: nextIp(node) };
  });
  const svc: Resource = {
    apiVersion: KINDS.Service.apiVersion,
    kind: KINDS.Service.kind,
    metadata: { name, namespace, labels: { ...labels, tier: s % 2 === 0 ? 'frontend' : 'backend' } },
    spec: {
      type: 'ClusterIP',
      clusterIP: `10.96.${Math.floor(s / 250)}.${(s % 250) + 1}`,
      selector: labels,
      ports: [{ name: 'http', port: SERVICE_PORT, targetPort: SERVICE_PORT, protocol: 'TCP' }],
    },
  };
  const slice: Resource = {
    apiVersion: KINDS.EndpointSlice.apiVersion,
    kind: KINDS.EndpointSlice.kind,
    metadata: { name: `${name}-${suffix(random, 5)}`, namespace, labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: SERVICE_PORT, protocol: 'TCP' }],
    endpoints: pods.map((p) => ({
      addresses: [p.ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: p.node,
      targetRef: { kind: 'Pod', name: p.name, namespace },
    })),
  };
  const podResources: Resource[] = pods.map((p) => ({
    apiVersion: KINDS.Pod.apiVersion,
    kind: KINDS.Pod.kind,
    metadata: {
      name: p.name,
      namespace,
      labels: { ...labels, version: 'v1', 'pod-template-hash': replicaSet.slice(name.length + 1) },
    },
    spec: { serviceAccountName: name, nodeName: p.node },
    status: { phase: 'Running', podIP: p.ip, podIPs: [{ ip: p.ip }] },
  }));
  return [svc, slice, ...podResources];
}

function gloo(
  kind: { apiVersion: string; kind: string },
  name: string,
  namespace: string,
  spec: unknown,
  labels?: Record<string, string>,
): Resource {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec,
  };
}

/** The Gloo resources of one exported service: its VirtualDestination, a RouteTable and an AccessPolicy. */
function exportResources(shape: WorkloadShape, s: number): Resource[] {
  const name = serviceName(s);
  const namespace = serviceNamespace(s);
  const vd = `${name}-global`;
  const client = serviceName((s + 1) % shape.servicesPerCluster);
  return [
    gloo(
      KINDS.VirtualDestination,
      vd,
      namespace,
      {
        hosts: [`${name}.global`],
        services: [{ labels: { app: name } }],
        ports: [{ number: SERVICE_PORT, protocol: 'HTTP', targetPort: { name: 'http' } }],
      },
      { failover: 'enabled' },
    ),
    gloo(KINDS.RouteTable, `${name}-routes`, namespace, {
      hosts: [`${name}.global`],
      http: [
        {
          name: 'api',
          labels: { route: 'global' },
          matchers: [{ uri: { prefix: '/api' } }],
          forwardTo: {
            destinations: [{ ref: { name: vd }, kind: 'VIRTUAL_DESTINATION', port: { number: SERVICE_PORT } }],
          },
        },
      ],
    }),
    gloo(KINDS.AccessPolicy, `${name}-access`, namespace, {
      applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { name: vd, namespace } }],
      config: {
        authz: {
          allowedClients: [
            {
              serviceAccountSelector: { name: client, namespace: serviceNamespace((s + 1) % shape.servicesPerCluster) },
            },
          ],
          allowedMethods: ['GET', 'POST'],
        },
      },
    }),
  ];
}

/** Mesh-wide resilience policies that apply to every exported destination and route. */
function meshPolicies(): Resource[] {
  const ns = NAMESPACES[0];
  const ring = REGIONS.map((from, i) => ({
    from: { region: from },
    to: [{ region: REGIONS[(i + 1) % REGIONS.length] as string }],
  }));
  return [
    gloo(KINDS.FailoverPolicy, 'global-failover', ns, {
      applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { labels: { failover: 'enabled' } } }],
      config: { localityMappings: ring },
    }),
    gloo(KINDS.OutlierDetectionPolicy, 'global-outlier', ns, {
      applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { labels: { failover: 'enabled' } } }],
      config: { consecutiveErrors: 3, interval: '10s', baseEjectionTime: '30s', maxEjectionPercent: 50 },
    }),
    gloo(KINDS.RetryTimeoutPolicy, 'global-retry', ns, {
      applyToRoutes: [{ route: { labels: { route: 'global' } } }],
      config: {
        retries: { attempts: 3, perTryTimeout: '2s', retryOn: 'connect-failure,refused-stream,unavailable,5xx' },
        requestTimeout: '10s',
      },
    }),
  ];
}

/** Every discovered and Gloo resource of cluster `c`, normalized the way discovery providers normalize them. */
function clusterResources(shape: WorkloadShape, c: number): Resource[] {
  const random = seededRandom(shape.seed * 1009 + c);
  const podsOnNode = new Array<number>(shape.nodesPerCluster).fill(0);
  // Each node owns a /24 of the cluster's pod range (see podRangePrefix; up to 254 pods per node).
  const nextIp = (node: number): string => {
    const k = (podsOnNode[node] = (podsOnNode[node] ?? 0) + 1);
    if (k > 254)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `node ${node} of cluster ${c} would hold more than 254 pods; add nodes to the workload shape`,
      );
    return `${podRangePrefix(c)}.${node}.${k}`;
  };
  const resources: Resource[] = [...nodes(shape, c), eastWestGateway(c)];
  for (let s = 0; s < shape.servicesPerCluster; s++) resources.push(...service(shape, c, s, random, nextIp));
  if (c === 0) {
    for (let s = 0; s < shape.servicesPerCluster; s++)
      if (isExported(shape, s)) resources.push(...exportResources(shape, s));
    resources.push(...meshPolicies());
  }
  return resources.map(normalizeResource);
}

function checkShape(shape: WorkloadShape): void {
  if (shape.clusters > MAX_CLUSTERS || shape.nodesPerCluster > 256) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `workload shape exceeds the address plan (at most ${MAX_CLUSTERS} clusters of at most 256 nodes)`,
    );
  }
}

/** The input snapshot of cluster `c` alone (generation 1), equal to the one generateWorkload builds for it. */
export function generateClusterInput(shape: WorkloadShape, c: number): InputSnapshot {
  checkShape(shape);
  return buildInputSnapshot({
    cluster: clusterName(c),
    epoch: EPOCH,
    generation: 1,
    resources: clusterResources(shape, c),
  });
}

/** Builds the input snapshots of `shape`. Deterministic: same shape ⇒ same input hashes. */
export function generateWorkload(shape: WorkloadShape): Workload {
  checkShape(shape);
  const inputs = new Map<string, InputSnapshot>();
  const clusters: ClusterInfo[] = [];
  const inputsByKind: Record<string, number> = {};
  let inputResources = 0;
  let inputBytes = 0;
  for (let c = 0; c < shape.clusters; c++) {
    const name = clusterName(c);
    const snapshot = generateClusterInput(shape, c);
    inputs.set(name, snapshot);
    clusters.push({ name });
    inputResources += snapshot.resources.length;
    inputBytes += snapshot.bytes;
    for (const r of snapshot.resources) inputsByKind[r.kind] = (inputsByKind[r.kind] ?? 0) + 1;
  }
  const exportedServices = Array.from({ length: shape.servicesPerCluster }, (_, s) => s).filter((s) =>
    isExported(shape, s),
  ).length;
  const counts: WorkloadCounts = {
    clusters: shape.clusters,
    servicesPerCluster: shape.servicesPerCluster,
    endpointsPerService: shape.endpointsPerService,
    nodesPerCluster: shape.nodesPerCluster,
    regions: Math.min(shape.clusters, REGIONS.length),
    namespaces: Math.min(shape.servicesPerCluster, NAMESPACES.length),
    exportedServices,
    virtualDestinations: inputsByKind[KINDS.VirtualDestination.kind] ?? 0,
    inputResources,
    inputBytes,
    inputsByKind,
    inputDigest: sha256Hex([...inputs.values()].map((s) => s.hash).join('\n')),
  };
  return { shape, inputs, clusters, counts };
}

/** Tier S (see TIER_S). */
export function tierS(): Workload {
  return generateWorkload(TIER_S);
}
