/** VirtualDestination -> ServiceEntry, as seen from one consuming cluster. */
import { isIP } from 'node:net';
import { KINDS, canonicalConcat, canonicalPart, type Resource } from '@meshrelay/api';
import type { ClusterIndex } from '../gloo/cluster-index.ts';
import { virtualDestinationOutputName, outputMetadata } from './names.ts';
import { CLUSTER_LABEL, type Backend, type VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { sameElements } from '../engine/same-content.ts';

export interface ClusterContext {
  readonly name: string;
  readonly trustDomain: string;
  readonly network: string;
  readonly clusterDomain: string;
}

interface WorkloadEntry {
  address: string;
  ports: Record<string, number>;
  labels: Record<string, string>;
  network: string;
  locality?: string;
  weight?: number;
}

/** Endpoints of a backing cluster reached directly: one entry per pod IP (canonicalPart copies ports and labels). */
function directEntries(backend: Backend, network: string): WorkloadEntry[] {
  return backend.endpoints.map((ep) => ({
    address: ep.address,
    ports: ep.ports,
    labels: ep.labels,
    network,
    locality: ep.locality,
  }));
}

/**
 * Endpoints of a remote backing cluster reached through its east-west gateway: one entry per
 * locality, weighted by the number of ready endpoints there, so locality-aware load balancing
 * and failover still see where the endpoints are.
 */
function gatewayEntries(
  backend: Backend,
  gateway: { address: string; port: number },
  network: string,
  subsetKeys: readonly string[],
): WorkloadEntry[] {
  // One entry per (locality, values of the labels subsets select by), so subsets still resolve through the gateway.
  const groups = new Map<string, { locality: string; labels: Record<string, string>; count: number }>();
  for (const ep of backend.endpoints) {
    const labels: Record<string, string> = {};
    for (const key of subsetKeys) if (ep.labels[key] !== undefined) labels[key] = ep.labels[key];
    labels[CLUSTER_LABEL] = backend.cluster;
    const id = JSON.stringify([ep.locality ?? '', Object.entries(labels).sort()]);
    const group = groups.get(id) ?? { locality: ep.locality ?? '', labels, count: 0 };
    group.count += 1;
    groups.set(id, group);
  }
  return [...groups.keys()].sort().map((id) => {
    const group = groups.get(id) as { locality: string; labels: Record<string, string>; count: number };
    const ports: Record<string, number> = {};
    for (const name of Object.keys(backend.endpoints[0]?.ports ?? {})) ports[name] = gateway.port;
    const entry: WorkloadEntry = {
      address: gateway.address,
      ports,
      labels: group.labels,
      network,
      weight: group.count,
    };
    if (group.locality !== '') entry.locality = group.locality;
    return entry;
  });
}

/** One way a backend is reached (directly: no address and port) and the entries built for it. */
interface BuiltWay {
  readonly address: string | null;
  readonly port: number | null;
  readonly network: string;
  readonly subsetKeys: readonly string[];
  readonly entries: readonly WorkloadEntry[];
}

/**
 * Built entries per backend, by how they are reached: the same for every consumer that reaches
 * the backend that way. A backend is reached in few ways (directly, through its gateway), so
 * they are compared field by field, without building a key for each of the many lookups.
 */
const builtEntries = new WeakMap<Backend, BuiltWay[]>();

/** Whether every entry of a built group has an IP address (STATIC resolution), per group. */
const allAddressesIp = new WeakMap<readonly WorkloadEntry[], boolean>();

function addressesAreIps(group: readonly WorkloadEntry[]): boolean {
  let ips = allAddressesIp.get(group);
  if (ips === undefined) {
    ips = group.every((e) => isIP(e.address) !== 0);
    allAddressesIp.set(group, ips);
  }
  return ips;
}

/**
 * The entries of one backend, directly (no gateway) or through `gateway`, as one frozen
 * canonical array of frozen canonical parts: every ServiceEntry that holds them (one per
 * consumer, and across translations while the backend is unchanged) shares the objects and
 * their encodings, and is encoded from the groups' encodings (see `canonicalConcat`).
 */
function entriesOf(
  backend: Backend,
  gateway: { address: string; port: number } | undefined,
  network: string,
  subsetKeys: readonly string[],
): readonly WorkloadEntry[] {
  let ways = builtEntries.get(backend);
  if (!ways) {
    ways = [];
    builtEntries.set(backend, ways);
  }
  const address = gateway?.address ?? null;
  const port = gateway?.port ?? null;
  for (const way of ways) {
    if (
      way.address === address &&
      way.port === port &&
      way.network === network &&
      sameElements(way.subsetKeys, subsetKeys)
    )
      return way.entries;
  }
  const entries = canonicalPart(
    gateway ? gatewayEntries(backend, gateway, network, subsetKeys) : directEntries(backend, network),
  );
  ways.push({ address, port, network, subsetKeys: [...subsetKeys], entries });
  return entries;
}

/**
 * Builds the ServiceEntry of `vd` for `consumer`. Endpoints in the consumer itself, and in
 * clusters without an east-west gateway, are pod IPs; other clusters' endpoints go through
 * their gateway. Resolution is STATIC unless a gateway is known only by host name (DNS).
 */
export function buildServiceEntry(
  vd: VirtualDestinationModel,
  consumer: ClusterContext,
  indexes: ReadonlyMap<string, ClusterIndex>,
  contexts: ReadonlyMap<string, ClusterContext>,
  vip: string | undefined,
  subsetKeys: readonly string[] = [],
  gatewayOf: (cluster: string, index: ClusterIndex | undefined) => { address: string; port: number } | undefined = (
    _,
    index,
  ) => index?.eastWestGateway,
): Resource {
  const groups: (readonly WorkloadEntry[])[] = [];
  for (const backend of vd.backends) {
    const network = contexts.get(backend.cluster)?.network ?? backend.cluster;
    const gateway =
      backend.cluster === consumer.name ? undefined : gatewayOf(backend.cluster, indexes.get(backend.cluster));
    groups.push(entriesOf(backend, gateway && backend.endpoints.length > 0 ? gateway : undefined, network, subsetKeys));
  }
  // One array shared by nobody else, but made of groups shared by every consumer that reaches a backend the same way.
  const endpoints = canonicalConcat(groups);
  const resolution = groups.every(addressesAreIps) ? 'STATIC' : 'DNS';
  const spec: Record<string, unknown> = {
    hosts: [...vd.hosts],
    ports: vd.ports.map((p) => ({ number: p.number, name: p.name, protocol: p.protocol })),
    location: 'MESH_INTERNAL',
    resolution,
    endpoints,
  };
  if (vip !== undefined) spec['addresses'] = [vip];
  return {
    apiVersion: KINDS.ServiceEntry.apiVersion,
    kind: KINDS.ServiceEntry.kind,
    metadata: outputMetadata(virtualDestinationOutputName(vd.owned.name), vd.owned.namespace),
    spec,
  };
}
