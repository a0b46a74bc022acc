/**
 * The two change kinds the tier bench makes on the whole path (issue 26.4): an address change of
 * one endpoint of an exported service (its owner's output changes: the owner's ServiceEntry lists
 * the pod addresses, other clusters reach it through the east-west gateway; an address change of a
 * non-exported service changes no output at all), and a readiness flip of one endpoint of an
 * exported service (its VirtualDestination's endpoints and weights change in every cluster's
 * output). Deterministic, so a load generator and the bench editing a manifest apply the same change.
 */
import { KINDS, MeshrelayError, type Resource } from '@meshrelay/api';
import { clusterName, serviceName, type WorkloadShape } from '../workload.ts';

export type ChangeKind = 'address' | 'readiness';

export interface KindChange {
  readonly kind: ChangeKind;
  /** 0-based number of the change within its kind. */
  readonly index: number;
  readonly cluster: string;
  readonly service: string;
  /** address: the endpoint's new address (10.98.0.0/16, outside every generated range). */
  readonly address?: string;
  /** readiness: the endpoint's new ready condition. */
  readonly ready?: boolean;
}

/**
 * Change `index` of `kind`: the target clusters in turn (`targets`, cluster indexes), then the next
 * exported service; always its first endpoint. Readiness changes go in pairs: even ones set the
 * endpoint unready, odd ones ready again.
 */
export function kindChange(
  shape: WorkloadShape,
  kind: ChangeKind,
  index: number,
  targets: readonly number[],
): KindChange {
  if (targets.length === 0)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'kindChange: no target clusters');
  const exported = Math.ceil(shape.servicesPerCluster / shape.exportEvery);
  if (kind === 'address') {
    const cluster = clusterName(targets[index % targets.length] as number);
    const service = serviceName((Math.floor(index / targets.length) % exported) * shape.exportEvery);
    return { kind, index, cluster, service, address: `10.98.${Math.floor(index / 250)}.${(index % 250) + 1}` };
  }
  // Readiness changes come in pairs on one endpoint (unready, then ready again), so a run leaves every endpoint ready.
  const pair = Math.floor(index / 2);
  const pairCluster = clusterName(targets[pair % targets.length] as number);
  const pairService = serviceName((Math.floor(pair / targets.length) % exported) * shape.exportEvery);
  return { kind, index, cluster: pairCluster, service: pairService, ready: index % 2 === 1 };
}

interface SliceEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  targetRef?: { name?: string };
}

/** The resources with the change applied (new objects for the changed resources; the rest shared). */
export function applyKindChange(resources: readonly Resource[], change: KindChange): Resource[] {
  const sliceAt = resources.findIndex(
    (r) => r.kind === KINDS.EndpointSlice.kind && r.metadata.labels?.['kubernetes.io/service-name'] === change.service,
  );
  const slice = structuredClone(resources[sliceAt]) as (Resource & { endpoints?: SliceEndpoint[] }) | undefined;
  const endpoint = slice?.endpoints?.[0];
  if (!slice || !endpoint)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `${change.kind} change ${change.index}: ${change.cluster} has no EndpointSlice endpoint for ${change.service}`,
    );
  const out = [...resources];
  out[sliceAt] = slice;
  if (change.kind === 'readiness') {
    endpoint.conditions = { ...endpoint.conditions, ready: change.ready === true };
    return out;
  }
  const address = change.address as string;
  endpoint.addresses = [address];
  const podName = endpoint.targetRef?.name;
  const podAt = resources.findIndex(
    (r) =>
      r.kind === KINDS.Pod.kind && r.metadata.name === podName && r.metadata.namespace === slice.metadata.namespace,
  );
  if (podAt >= 0) {
    const pod = structuredClone(resources[podAt]) as Resource & {
      status: { podIP?: string; podIPs?: Array<{ ip: string }> };
    };
    pod.status = { ...pod.status, podIP: address, podIPs: [{ ip: address }] };
    out[podAt] = pod;
  }
  return out;
}

/** Which clusters run real agents: `count` of them spread over the fleet (first, last, evenly between). */
export function realAgentIndexes(clusters: number, count: number): number[] {
  const n = Math.min(count, clusters);
  if (n <= 0) return [];
  if (n === 1) return [0];
  const picked = new Set<number>();
  for (let i = 0; i < n; i++) picked.add(Math.round((i * (clusters - 1)) / (n - 1)));
  return [...picked].sort((a, b) => a - b);
}

/**
 * The clusters the kind changes target, in turn: real-agent clusters and relay-client clusters
 * alternate (so both paths make the change), each list taken in order.
 */
export function changeTargets(clusters: number, real: readonly number[]): number[] {
  const others = Array.from({ length: clusters }, (_, i) => i)
    .filter((i) => !real.includes(i))
    .slice(0, Math.max(real.length, 1));
  const out: number[] = [];
  for (let i = 0; i < Math.max(real.length, others.length); i++) {
    if (i < real.length) out.push(real[i] as number);
    if (i < others.length) out.push(others[i] as number);
  }
  return out;
}
