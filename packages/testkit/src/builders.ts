/**
 * Builders of input resources and snapshots for tests: the smallest valid object of each
 * kind, with the fields a test cares about as parameters. Every builder returns a new
 * plain object the caller may change.
 */
import { KINDS, buildInputSnapshot, type InputSnapshot, type KindRef, type Resource } from '@meshrelay/api';

type Labels = Record<string, string>;

function resource(
  ref: KindRef,
  name: string,
  namespace: string | undefined,
  body: Record<string, unknown>,
  labels?: Labels,
): Resource {
  const metadata: Record<string, unknown> = { name };
  if (namespace !== undefined) metadata['namespace'] = namespace;
  if (labels && Object.keys(labels).length > 0) metadata['labels'] = { ...labels };
  return { apiVersion: ref.apiVersion, kind: ref.kind, metadata, ...body } as unknown as Resource;
}

export interface ServicePortInit {
  readonly name: string;
  readonly port: number;
  readonly targetPort?: number | string;
}

export function buildService(init: {
  name: string;
  namespace: string;
  ports: readonly ServicePortInit[];
  selector?: Labels;
  labels?: Labels;
}): Resource {
  const spec: Record<string, unknown> = { ports: init.ports.map((p) => ({ ...p, protocol: 'TCP' })) };
  if (init.selector) spec['selector'] = { ...init.selector };
  return resource(KINDS.Service, init.name, init.namespace, { spec }, init.labels);
}

/** An east-west gateway Service (label istio=eastwestgateway) with a load-balancer address. */
export function buildEastWestGateway(init: {
  address: string;
  namespace?: string;
  name?: string;
  tlsPort?: number;
  hostname?: boolean;
}): Resource {
  const svc = buildService({
    name: init.name ?? 'istio-eastwestgateway',
    namespace: init.namespace ?? 'istio-gateways',
    ports: [{ name: 'tls', port: init.tlsPort ?? 15443, targetPort: 15443 }],
    selector: { istio: 'eastwestgateway' },
    labels: { istio: 'eastwestgateway' },
  });
  const ingress = init.hostname ? { hostname: init.address } : { ip: init.address };
  return {
    ...svc,
    spec: { ...(svc.spec as object), type: 'LoadBalancer' },
    status: { loadBalancer: { ingress: [ingress] } },
  };
}

export interface EndpointInit {
  readonly ip: string;
  readonly pod?: string;
  readonly node?: string;
  readonly ready?: boolean;
}

export function buildEndpointSlice(init: {
  service: string;
  namespace: string;
  name?: string;
  ports: readonly { name: string; port: number }[];
  endpoints: readonly EndpointInit[];
}): Resource {
  return resource(
    KINDS.EndpointSlice,
    init.name ?? `${init.service}-abcde`,
    init.namespace,
    {
      addressType: 'IPv4',
      ports: init.ports.map((p) => ({ ...p, protocol: 'TCP' })),
      endpoints: init.endpoints.map((e) => {
        const ep: Record<string, unknown> = { addresses: [e.ip], conditions: { ready: e.ready ?? true } };
        if (e.node !== undefined) ep['nodeName'] = e.node;
        if (e.pod !== undefined) ep['targetRef'] = { kind: 'Pod', name: e.pod, namespace: init.namespace };
        return ep;
      }),
    },
    { 'kubernetes.io/service-name': init.service },
  );
}

export function buildPod(init: {
  name: string;
  namespace: string;
  ip: string;
  node?: string;
  serviceAccount?: string;
  labels?: Labels;
}): Resource {
  const spec: Record<string, unknown> = { serviceAccountName: init.serviceAccount ?? 'default' };
  if (init.node !== undefined) spec['nodeName'] = init.node;
  return resource(
    KINDS.Pod,
    init.name,
    init.namespace,
    { spec, status: { phase: 'Running', podIP: init.ip, podIPs: [{ ip: init.ip }] } },
    init.labels,
  );
}

export function buildNode(init: { name: string; region?: string; zone?: string }): Resource {
  const labels: Labels = {};
  if (init.region !== undefined) labels['topology.kubernetes.io/region'] = init.region;
  if (init.zone !== undefined) labels['topology.kubernetes.io/zone'] = init.zone;
  return resource(KINDS.Node, init.name, undefined, {}, labels);
}

/** A Gloo resource of `kind` with the given spec. */
export function buildGloo(
  kind: keyof typeof KINDS,
  init: { name: string; namespace: string; spec: Record<string, unknown>; labels?: Labels },
): Resource {
  return resource(KINDS[kind], init.name, init.namespace, { spec: structuredClone(init.spec) }, init.labels);
}

export function buildVirtualDestination(init: {
  name: string;
  namespace: string;
  hosts: readonly string[];
  services: readonly Record<string, unknown>[];
  ports: readonly Record<string, unknown>[];
  labels?: Labels;
}): Resource {
  return buildGloo('VirtualDestination', {
    name: init.name,
    namespace: init.namespace,
    labels: init.labels,
    spec: { hosts: [...init.hosts], services: [...init.services], ports: [...init.ports] },
  });
}

let generation = 0;

/** An input snapshot of `resources` for `cluster` (epoch "test", increasing generation). */
export function buildTestInputSnapshot(cluster: string, resources: readonly Resource[]): InputSnapshot {
  generation += 1;
  return buildInputSnapshot({ cluster, epoch: 'test', generation, resources });
}
