/**
 * The ServiceEntries of a VirtualDestination's semantic addresses (policy-vips.ts), as seen from one
 * consuming cluster. A policy entry is the default entry under the policy's hosts and address: the
 * same endpoints, so the policy is carried only by its DestinationRule (destination-rule.ts). An
 * instance entry holds the endpoints of that one instance, reached as the default entry reaches
 * them (directly in the consumer and in clusters without an east-west gateway, else through the
 * gateway, where the gateway's own cluster serves the same host with the pod's address).
 */
import { isIP } from 'node:net';
import { KINDS, type Resource } from '@meshrelay/api';
import type { ClusterIndex, EastWestGateway } from '../gloo/cluster-index.ts';
import { CLUSTER_LABEL, type VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { outputMetadata, outputName } from './names.ts';
import {
  POLICY_HOST_LABEL,
  type BalancingPolicy,
  type InstanceAddress,
  type SemanticAddresses,
} from './policy-vips.ts';
import type { ClusterContext } from './service-entry.ts';

/** Longest DNS name: a longer prefixed host would make the whole output invalid, so it is left out. */
const MAX_HOST = 253;

/** `<label>.<host>` for each of the VirtualDestination's hosts that stays a valid DNS name. */
export function prefixedHosts(label: string, hosts: readonly string[]): string[] {
  return hosts.map((h) => `${label}.${h}`).filter((h) => h.length <= MAX_HOST);
}

/** A policy's hosts. */
export function policyHosts(policy: BalancingPolicy, hosts: readonly string[]): string[] {
  return prefixedHosts(POLICY_HOST_LABEL[policy], hosts);
}

/** Output name of a policy's ServiceEntry / DestinationRule for host index `i`. */
export function policyOutputName(vdName: string, policy: BalancingPolicy, i = 0): string {
  return i === 0 ? outputName(vdName, 'vd', policy) : outputName(vdName, 'vd', policy, String(i));
}

/** Output name of an instance's ServiceEntry / DestinationRule for host index `i`. */
export function instanceOutputName(vdName: string, id: string, i = 0): string {
  return i === 0 ? outputName(vdName, 'vd', 'instance', id) : outputName(vdName, 'vd', 'instance', id, String(i));
}

type GatewayOf = (cluster: string, index: ClusterIndex | undefined) => EastWestGateway | undefined;

function instanceEndpoints(
  vd: VirtualDestinationModel,
  instance: InstanceAddress,
  consumer: ClusterContext,
  indexes: ReadonlyMap<string, ClusterIndex>,
  contexts: ReadonlyMap<string, ClusterContext>,
  gatewayOf: GatewayOf,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const placement of instance.placements) {
    const backend = vd.backends[placement.backend];
    if (backend === undefined) continue;
    const network = contexts.get(backend.cluster)?.network ?? backend.cluster;
    const gateway =
      backend.cluster === consumer.name ? undefined : gatewayOf(backend.cluster, indexes.get(backend.cluster));
    for (const e of placement.endpoints) {
      const ep = backend.endpoints[e];
      if (ep === undefined) continue;
      const entry: Record<string, unknown> = gateway
        ? {
            address: gateway.address,
            ports: Object.fromEntries(Object.keys(ep.ports).map((name) => [name, gateway.port])),
            labels: { [CLUSTER_LABEL]: backend.cluster },
            network,
            weight: 1,
          }
        : { address: ep.address, ports: { ...ep.ports }, labels: { ...ep.labels }, network };
      if (ep.locality !== undefined && ep.locality !== '') entry['locality'] = ep.locality;
      out.push(entry);
    }
  }
  return out;
}

/**
 * The policy and instance ServiceEntries of `vd` for `consumer`, built from its default entry
 * (buildServiceEntry) and the allocated addresses. Nothing when no such address is allocated.
 */
export function buildSemanticServiceEntries(
  vd: VirtualDestinationModel,
  defaultEntry: Resource,
  addresses: SemanticAddresses,
  consumer: ClusterContext,
  indexes: ReadonlyMap<string, ClusterIndex>,
  contexts: ReadonlyMap<string, ClusterContext>,
  gatewayOf: GatewayOf,
): Resource[] {
  const spec = defaultEntry.spec as Record<string, unknown>;
  const namespace = vd.owned.namespace;
  const out: Resource[] = [];
  for (const { policy, address } of addresses.policies) {
    const hosts = policyHosts(policy, vd.hosts);
    if (hosts.length === 0) continue;
    out.push({
      apiVersion: KINDS.ServiceEntry.apiVersion,
      kind: KINDS.ServiceEntry.kind,
      metadata: outputMetadata(policyOutputName(vd.owned.name, policy), namespace),
      spec: { ...spec, hosts, addresses: [address] },
    });
  }
  for (const instance of addresses.instances) {
    const hosts = prefixedHosts(instance.id, vd.hosts);
    if (hosts.length === 0) continue;
    const endpoints = instanceEndpoints(vd, instance, consumer, indexes, contexts, gatewayOf);
    out.push({
      apiVersion: KINDS.ServiceEntry.apiVersion,
      kind: KINDS.ServiceEntry.kind,
      metadata: outputMetadata(instanceOutputName(vd.owned.name, instance.id), namespace),
      spec: {
        hosts,
        addresses: [instance.address],
        ports: spec['ports'],
        location: 'MESH_INTERNAL',
        resolution: endpoints.every((e) => isIP(String(e['address'])) !== 0) ? 'STATIC' : 'DNS',
        endpoints,
      },
    });
  }
  return out;
}
