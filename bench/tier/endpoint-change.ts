/**
 * The change the tier bench makes, over and over: one endpoint of one exported service in one
 * cluster gets a new address (its EndpointSlice entry and its Pod's IP), as when a pod is
 * replaced on the same node. Deterministic, so the load generator (which pushes it) and the
 * bench (which recomputes it for the baseline) apply the same change to the same resources.
 */
import { KINDS, MeshrelayError, type Resource } from '@meshrelay/api';
import { clusterName, serviceName, type WorkloadShape } from '../workload.ts';

export interface EndpointChange {
  /** 0-based number of the change in the run. */
  readonly index: number;
  readonly cluster: string;
  readonly service: string;
  /** The endpoint's new address; unique per change, outside every generated pod range. */
  readonly address: string;
}

/** Change `index`: clusters in turn, then the next exported service; first endpoint; an address from 10.99.0.0/16. */
export function endpointChange(shape: WorkloadShape, index: number): EndpointChange {
  const round = Math.floor(index / shape.clusters);
  const exported = Math.ceil(shape.servicesPerCluster / shape.exportEvery);
  return {
    index,
    cluster: clusterName(index % shape.clusters),
    service: serviceName((round % exported) * shape.exportEvery),
    address: `10.99.${Math.floor(index / 250)}.${(index % 250) + 1}`,
  };
}

interface SliceEndpoint {
  addresses: string[];
  targetRef?: { name?: string };
}

/** The resources with the change applied (new objects for the two changed resources; the rest shared). */
export function applyEndpointChange(resources: readonly Resource[], change: EndpointChange): Resource[] {
  const sliceAt = resources.findIndex(
    (r) => r.kind === KINDS.EndpointSlice.kind && r.metadata.labels?.['kubernetes.io/service-name'] === change.service,
  );
  const slice = structuredClone(resources[sliceAt]) as (Resource & { endpoints?: SliceEndpoint[] }) | undefined;
  const endpoint = slice?.endpoints?.[0];
  const podName = endpoint?.targetRef?.name;
  if (!slice || !endpoint || podName === undefined) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `change ${change.index}: ${change.cluster} has no EndpointSlice endpoint with a Pod for ${change.service}`,
    );
  }
  endpoint.addresses = [change.address];
  const out = [...resources];
  out[sliceAt] = slice;
  const podAt = resources.findIndex(
    (r) =>
      r.kind === KINDS.Pod.kind && r.metadata.name === podName && r.metadata.namespace === slice.metadata.namespace,
  );
  if (podAt >= 0) {
    const pod = structuredClone(resources[podAt]) as Resource & {
      status: { podIP?: string; podIPs?: Array<{ ip: string }> };
    };
    pod.status = { ...pod.status, podIP: change.address, podIPs: [{ ip: change.address }] };
    out[podAt] = pod;
  }
  return out;
}

/**
 * The first `count` change indexes whose cluster runs no real agent (those clusters' inputs come from manifests, not a
 * load generator).
 */
export function loadGeneratorChangeIndexes(
  shape: WorkloadShape,
  count: number,
  realClusters: ReadonlySet<string>,
): number[] {
  const out: number[] = [];
  if (realClusters.size >= shape.clusters) return out;
  for (let i = 0; out.length < count; i++) if (!realClusters.has(endpointChange(shape, i).cluster)) out.push(i);
  return out;
}
